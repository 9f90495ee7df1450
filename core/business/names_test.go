package business

import "testing"

func TestParseAdminName_DropsTitlesSuffixesAndMiddleNames(t *testing.T) {
	for _, tc := range []struct {
		in, first, last string
	}{
		{"Jane Smith", "Jane", "Smith"},
		{"Dr. Jane Smith", "Jane", "Smith"},
		{"Dr Jane Smith", "Jane", "Smith"},
		{"DR. JANE SMITH", "JANE", "SMITH"},
		{"Jane A. Smith, MD", "Jane", "Smith"},
		{"Jane Smith, M.D.", "Jane", "Smith"},
		{"Jane Smith MD", "Jane", "Smith"},
		{"Jane Smith, MD, PhD", "Jane", "Smith"},
		{"Smith, Jane", "Jane", "Smith"},
		{"Smith, Jane A.", "Jane", "Smith"},
		{"Smith, Dr. Jane", "Jane", "Smith"},
		{"Smith, Jane, MD", "Jane", "Smith"},
		{"Dr. Anna van der Berg, PhD", "Anna", "van der Berg"},
		{"Maria de la Cruz", "Maria", "de la Cruz"},
		{"Ludwig van Beethoven", "Ludwig", "van Beethoven"},
		{"Prince", "Prince", ""},
		{"Dr. Prince", "Prince", ""},
		{"  ", "", ""},
		{"", "", ""},
		{"Mr. John Q. Public Jr.", "John", "Public"},
		{"Mrs. Mary  Ann   Jones III", "Mary", "Jones"},
		{"Dr.", "", ""},
		{"Prof. Dr. Hans Müller", "Hans", "Müller"},
		{"  Jane \t Smith  ", "Jane", "Smith"},
	} {
		first, last := ParseAdminName(tc.in)
		if first != tc.first || last != tc.last {
			t.Errorf("ParseAdminName(%q) = %q, %q; want %q, %q", tc.in, first, last, tc.first, tc.last)
		}
	}
}

// Some surnames are spelt like credentials or generational suffixes ("Do",
// a common Vietnamese surname, like the osteopathic degree DO); the last
// name must survive.
func TestParseAdminName_KeepsSurnameSpeltLikeCredential(t *testing.T) {
	for _, tc := range []struct {
		in, first, last string
	}{
		{"Thanh Do", "Thanh", "Do"},
		{"Dr. Thanh Do", "Thanh", "Do"},
		{"Thanh Do, MD", "Thanh", "Do"},
		{"Thanh Do MD", "Thanh", "Do"},
		{"Do, Thanh", "Thanh", "Do"},
		{"Jane Smith, DO", "Jane", "Smith"},
	} {
		first, last := ParseAdminName(tc.in)
		if first != tc.first || last != tc.last {
			t.Errorf("ParseAdminName(%q) = %q, %q; want %q, %q", tc.in, first, last, tc.first, tc.last)
		}
	}
}
