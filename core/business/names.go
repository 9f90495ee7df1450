package business

import "strings"

var (
	nameTitles = wordSet("dr mr mrs ms miss mx prof sir madam rev fr")
	// nameSuffixes are generational suffixes and credentials.
	nameSuffixes = wordSet(`jr sr ii iii iv v md do phd dds dmd dvm od dpm pharmd psyd edd rn np lpn cnm crna
		pa pa-c aprn fnp fnp-c dnp msn bsn mph mba lcsw lmft lpc facs facp faap esq cpa`)
	// surnameParticles join the word after them into the last name.
	surnameParticles = wordSet("van von de der den da di del della la le du st st. dos das ter ten bin al")
)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// key normalises a name word for the title and suffix lists: lower case,
// dots and trailing commas dropped ("M.D.," → "md").
func key(w string) string {
	return strings.ReplaceAll(strings.Trim(strings.ToLower(w), ",."), ".", "")
}

// ParseAdminName splits a person's name into first and last name. Titles
// ("Dr.", "Mrs") and suffixes or credentials ("Jr.", "MD", "PhD") are
// dropped, "Last, First" is understood, middle names are dropped, and
// surname particles stay with the last name ("Anna van der Berg" → Anna,
// van der Berg). One word is a first name. A surname spelt like a
// credential ("Thanh Do", "Do, Thanh") is kept: without a comma, only
// suffixes after the last name are dropped.
func ParseAdminName(full string) (first, last string) {
	groups := strings.Split(strings.Join(strings.Fields(full), " "), ",")
	// Groups after a comma made only of suffixes are credentials
	// ("Jane Smith, MD, PhD"); another one is the given name ("Smith, Jane").
	name := groups[0]
	for _, g := range groups[1:] {
		if !allSuffixes(g) {
			name = g + " " + name
		}
	}
	words := strings.Fields(name)
	for len(words) > 1 && nameTitles[key(words[0])] {
		words = words[1:]
	}
	if len(words) == 1 && nameTitles[key(words[0])] {
		words = nil
	}
	for len(words) > 2 && nameSuffixes[key(words[len(words)-1])] {
		words = words[:len(words)-1]
	}
	switch len(words) {
	case 0:
		return "", ""
	case 1:
		return words[0], ""
	}
	i := len(words) - 1
	for i > 1 && surnameParticles[strings.ToLower(words[i-1])] {
		i--
	}
	return words[0], strings.Join(words[i:], " ")
}

// allSuffixes reports whether every word of s is a suffix or credential.
func allSuffixes(s string) bool {
	for _, w := range strings.Fields(s) {
		if !nameSuffixes[key(w)] {
			return false
		}
	}
	return true
}
