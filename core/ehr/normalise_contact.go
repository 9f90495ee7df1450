package ehr

import "strings"

// NormalContactPoint trims c's parts; ok is false when no value is left
// (the contact point is dropped).
func NormalContactPoint(c ContactPoint) (_ ContactPoint, ok bool) {
	c = ContactPoint{System: strings.TrimSpace(c.System), Value: strings.TrimSpace(c.Value), Use: strings.TrimSpace(c.Use)}
	return c, c.Value != ""
}

// NormalAddress trims a's parts and drops its empty lines; ok is false
// when nothing is left (the address is dropped).
func NormalAddress(a Address) (_ Address, ok bool) {
	a = Address{
		Line:       NonEmpty(a.Line),
		City:       strings.TrimSpace(a.City),
		State:      strings.TrimSpace(a.State),
		PostalCode: strings.TrimSpace(a.PostalCode),
		Country:    strings.TrimSpace(a.Country),
	}
	return a, len(a.Line) > 0 || a.City != "" || a.State != "" || a.PostalCode != "" || a.Country != ""
}
