package matchtest

// The lists the generator draws from: common US given names (most common
// first), the nicknames it writes for them, common US family names (most
// common first, with accents, hyphens, apostrophes and several words as
// EHRs hold them), streets and places. They are the generator's own: the
// matcher's tables are not used here.

var maleGiven = []string{
	"James", "Robert", "John", "Michael", "David", "William", "Richard", "Joseph", "Thomas", "Charles",
	"Christopher", "Daniel", "Matthew", "Anthony", "Mark", "Donald", "Steven", "Andrew", "Paul", "Joshua",
	"Kenneth", "Kevin", "Brian", "George", "Timothy", "Ronald", "Jason", "Edward", "Jeffrey", "Ryan",
	"Jacob", "Gary", "Nicholas", "Eric", "Jonathan", "Stephen", "Larry", "Justin", "Scott", "Brandon",
	"Benjamin", "Samuel", "Gregory", "Alexander", "Patrick", "Frank", "Raymond", "Jack", "Dennis", "Jerry",
	"Tyler", "Aaron", "José", "Adam", "Nathan", "Henry", "Zachary", "Douglas", "Peter", "Kyle",
	"Noah", "Ethan", "Jeremy", "Walter", "Christian", "Keith", "Roger", "Terry", "Austin", "Sean",
	"Gerald", "Carl", "Harold", "Dylan", "Arthur", "Lawrence", "Jordan", "Jesse", "Bryan", "Billy",
	"Bruce", "Gabriel", "Joe", "Logan", "Albert", "Willie", "Alan", "Eugene", "Russell", "Vincent",
	"Philip", "Bobby", "Johnny", "Bradley", "Roy", "Ralph", "Louis", "Juan", "Carlos", "Luis",
	"Theodore", "Frederick", "Nathaniel", "Liam", "Mason", "Elijah", "Lucas", "Oliver", "Héctor", "Andrés",
}

var femaleGiven = []string{
	"Mary", "Patricia", "Jennifer", "Linda", "Elizabeth", "Barbara", "Susan", "Jessica", "Sarah", "Karen",
	"Lisa", "Nancy", "Betty", "Sandra", "Margaret", "Ashley", "Kimberly", "Emily", "Donna", "Michelle",
	"Carol", "Amanda", "Melissa", "Deborah", "Stephanie", "Dorothy", "Rebecca", "Sharon", "Laura", "Cynthia",
	"Amy", "Kathleen", "Angela", "Shirley", "Brenda", "Emma", "Anna", "Pamela", "Nicole", "Samantha",
	"Katherine", "Christine", "Helen", "Debra", "Rachel", "Carolyn", "Janet", "Maria", "Catherine", "Heather",
	"Diane", "Olivia", "Julie", "Joyce", "Victoria", "Ruth", "Virginia", "Lauren", "Kelly", "Christina",
	"Joan", "Evelyn", "Judith", "Andrea", "Hannah", "Megan", "Cheryl", "Jacqueline", "Martha", "Madison",
	"Teresa", "Gloria", "Sara", "Janice", "Ann", "Kathryn", "Abigail", "Sophia", "Frances", "Jean",
	"Alice", "Judy", "Isabella", "Julia", "Grace", "Amber", "Denise", "Danielle", "Marilyn", "Beverly",
	"Charlotte", "Natalie", "Theresa", "Diana", "Brittany", "Doris", "Kayla", "Alexis", "Lori", "Marie",
	"María", "Sofía", "Lucía", "Alexandra", "Chloe", "Zoe", "Ava", "Mia", "Renée", "Inés",
}

// nicknames maps a given name to what some systems write instead.
var nicknames = map[string][]string{
	"William": {"Bill", "Will", "Billy"}, "Robert": {"Bob", "Rob", "Bobby"}, "Elizabeth": {"Liz", "Beth", "Betty", "Eliza"},
	"Margaret": {"Peggy", "Maggie", "Meg"}, "Katherine": {"Kate", "Katie", "Kathy"}, "James": {"Jim", "Jimmy"},
	"John": {"Jack", "Johnny"}, "Richard": {"Rick", "Dick", "Rich"}, "Michael": {"Mike"}, "Thomas": {"Tom", "Tommy"},
	"Charles": {"Chuck", "Charlie"}, "Joseph": {"Joe", "Joey"}, "Daniel": {"Dan", "Danny"}, "Anthony": {"Tony"},
	"Christopher": {"Chris"}, "Matthew": {"Matt"}, "Nicholas": {"Nick"}, "Edward": {"Ed", "Ted", "Eddie"},
	"Steven": {"Steve"}, "Jennifer": {"Jen", "Jenny"}, "Patricia": {"Pat", "Patty", "Trish"}, "Susan": {"Sue", "Susie"},
	"Deborah": {"Deb", "Debbie"}, "Rebecca": {"Becky"}, "Jessica": {"Jess"}, "Samantha": {"Sam"},
	"Alexander": {"Alex"}, "Benjamin": {"Ben"}, "Jonathan": {"Jon"}, "Andrew": {"Andy", "Drew"},
	"Kenneth": {"Ken", "Kenny"}, "Ronald": {"Ron", "Ronnie"}, "Donald": {"Don"}, "Timothy": {"Tim"},
	"Gregory": {"Greg"}, "Joshua": {"Josh"}, "Zachary": {"Zach"}, "Christine": {"Chris", "Tina"},
	"Victoria": {"Vicky", "Tori"}, "Theodore": {"Ted", "Teddy"}, "Frederick": {"Fred"}, "Dorothy": {"Dot", "Dottie"},
	"Barbara": {"Barb"}, "Catherine": {"Cathy", "Kate"}, "Abigail": {"Abby"}, "Nathaniel": {"Nate"},
	"Gabriel": {"Gabe"}, "Samuel": {"Sam"}, "Peter": {"Pete"}, "Raymond": {"Ray"}, "Lawrence": {"Larry"},
	"Jeffrey": {"Jeff"}, "Douglas": {"Doug"}, "Judith": {"Judy"}, "Cynthia": {"Cindy"}, "Kimberly": {"Kim"},
	"Pamela": {"Pam"}, "Sandra": {"Sandy"}, "Alexandra": {"Alex", "Sasha"}, "Madison": {"Maddie"},
	"Olivia": {"Liv"}, "Isabella": {"Bella", "Izzy"}, "Kathleen": {"Kathy", "Kath"}, "Gerald": {"Jerry"},
	"Philip": {"Phil"}, "Albert": {"Al", "Bert"}, "Vincent": {"Vince"}, "Bradley": {"Brad"},
}

var families = []string{
	"Smith", "Johnson", "Williams", "Brown", "Jones", "García", "Miller", "Davis", "Rodríguez", "Martínez",
	"Hernández", "López", "González", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin",
	"Lee", "Pérez", "Thompson", "White", "Harris", "Sánchez", "Clark", "Ramírez", "Lewis", "Robinson",
	"Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores",
	"Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts",
	"Gómez", "Phillips", "Evans", "Turner", "Díaz", "Parker", "Cruz", "Edwards", "Collins", "Reyes",
	"Stewart", "Morris", "Morales", "Murphy", "Cook", "Rogers", "Gutiérrez", "Ortiz", "Morgan", "Cooper",
	"Peterson", "Bailey", "Reed", "Kelly", "Howard", "Ramos", "Kim", "Cox", "Ward", "Richardson",
	"Watson", "Brooks", "Chávez", "Wood", "James", "Bennett", "Gray", "Mendoza", "Ruiz", "Hughes",
	"Price", "Álvarez", "Castillo", "Sanders", "Patel", "Myers", "Long", "Ross", "Foster", "Jiménez",
	"Powell", "Jenkins", "Perry", "Russell", "Sullivan", "Bell", "Coleman", "Butler", "Henderson", "Barnes",
	"Gonzales", "Fisher", "Vásquez", "Simmons", "Romero", "Jordan", "Patterson", "Alexander", "Hamilton", "Graham",
	"Reynolds", "Griffin", "Wallace", "Moreno", "West", "Cole", "Hayes", "Bryant", "Herrera", "Gibson",
	"Ellis", "Tran", "Medina", "Aguilar", "Stevens", "Murray", "Ford", "Castro", "Marshall", "Owens",
	"Harrison", "Fernández", "McDonald", "Woods", "Washington", "Kennedy", "Wells", "Vargas", "Henry", "Chen",
	"Freeman", "Webb", "Tucker", "Guzmán", "Burns", "Crawford", "Olson", "Simpson", "Porter", "Hunter",
	"Gordon", "Méndez", "Silva", "Shaw", "Snyder", "Mason", "Dixon", "Muñoz", "Hunt", "Hicks",
	"Holmes", "Palmer", "Wagner", "Black", "Robertson", "Boyd", "Rose", "Stone", "Salazar", "Fox",
	"Warren", "Mills", "Meyer", "Rice", "Schmidt", "García-López", "Núñez", "O'Brien", "O'Connor", "De La Cruz",
	"Del Rosario", "Van Buren", "De León", "St. John", "D'Angelo", "MacKenzie", "Ibáñez", "Peña", "Smith-Jones", "Ruiz-Díaz",
	"Zhang", "Wang", "Li", "Liu", "Singh", "Shah", "Yamamoto", "Tanaka", "Kowalski", "Nowak",
	"Müller", "Schröder", "Olsen", "Larsen", "Björk", "Dubois", "Lefèvre", "Rossi", "Russo", "Esposito",
	"Cohen", "Levy", "Friedman", "Goldberg", "Katz", "O'Neil", "McCarthy", "Fitzgerald", "Byrne", "Doyle",
	"Abbott", "Acosta", "Atkins", "Ayala", "Barker", "Becker", "Benson", "Bishop", "Blair", "Bowen",
	"Boyle", "Bradley", "Brennan", "Burke", "Caldwell", "Carlson", "Carpenter", "Chambers", "Chandler", "Christensen",
}

// streetTypes are the street types, each written long and short.
var streetTypes = [][2]string{
	{"Street", "St"}, {"Avenue", "Ave"}, {"Road", "Rd"}, {"Drive", "Dr"},
	{"Lane", "Ln"}, {"Boulevard", "Blvd"}, {"Court", "Ct"}, {"Place", "Pl"},
}

var streets = []string{
	"Main", "Oak", "Maple", "Cedar", "Pine", "Elm", "Washington", "Lake", "Hill", "Park",
	"Walnut", "Sunset", "Lincoln", "Jackson", "Franklin", "Highland", "Church", "Mill", "River", "Spring",
	"Meadow", "Forest", "Ridge", "Willow", "Chestnut", "Jefferson", "Madison", "Adams", "Center", "Broad",
	"Cherry", "Birch", "Valley", "Lakeview", "Hillcrest", "Orchard", "Magnolia", "Dogwood", "Sycamore", "Aspen",
	"Martin Luther King Jr", "Old Mill", "Prairie", "Cottonwood", "Juniper", "Bluebonnet", "Harbor", "Summit", "Vine", "Poplar",
}

// directions prefix some street names, written long or short.
var directions = [][2]string{{"North", "N"}, {"South", "S"}, {"East", "E"}, {"West", "W"}}

// place is a city with its state, the first three digits of its ZIP codes
// and its telephone area code.
type place struct {
	city, state, zip3, area string
}

var places = []place{
	{"Springfield", "IL", "627", "217"}, {"Chicago", "IL", "606", "312"}, {"Austin", "TX", "787", "512"},
	{"Houston", "TX", "770", "713"}, {"Phoenix", "AZ", "850", "602"}, {"Denver", "CO", "802", "303"},
	{"Seattle", "WA", "981", "206"}, {"Portland", "OR", "972", "503"}, {"Boston", "MA", "021", "617"},
	{"Miami", "FL", "331", "305"}, {"Atlanta", "GA", "303", "404"}, {"Columbus", "OH", "432", "614"},
	{"Nashville", "TN", "372", "615"}, {"Minneapolis", "MN", "554", "612"}, {"Sacramento", "CA", "958", "916"},
	{"San Diego", "CA", "921", "619"}, {"Albuquerque", "NM", "871", "505"}, {"Madison", "WI", "537", "608"},
	{"Raleigh", "NC", "276", "919"}, {"Richmond", "VA", "232", "804"}, {"St. Louis", "MO", "631", "314"},
	{"Salt Lake City", "UT", "841", "801"}, {"Omaha", "NE", "681", "402"}, {"Tucson", "AZ", "857", "520"},
}

var mailDomains = []string{"gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "icloud.com", "aol.com", "comcast.net", "proton.me"}

// fold is the generator's own accent folding, for the names it holds.
var fold = map[rune]string{
	'á': "a", 'à': "a", 'ä': "a", 'é': "e", 'è': "e", 'í': "i", 'ó': "o", 'ö': "o", 'ú': "u", 'ü': "u", 'ñ': "n",
	'Á': "A", 'É': "E", 'Í': "I", 'Ó': "O", 'Ú': "U", 'Ñ': "N", 'Ü': "U", 'Ö': "O",
}
