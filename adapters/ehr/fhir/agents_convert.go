package fhir

import (
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// How agents sit in FHIR R4: a Practitioner and its PractitionerRoles.

// agentRecord is an agent with every specialty of its roles (Agent shows
// the first), for filtering.
type agentRecord struct {
	ehr.Agent
	specialties []string
}

// toAgent converts a Practitioner and its PractitionerRoles into an agent:
// the name the search adapter would show (official, else current), its
// first e-mail, the first role's specialty (a coding's display, else the
// text), the locations of all roles, and the time zone of
// TimezoneExtension. Inactive roles are left out.
func toAgent(p practitioner, roles []practitionerRole, log *slog.Logger) agentRecord {
	out := agentRecord{Agent: ehr.Agent{ID: strings.TrimSpace(p.ID)}}
	if n := pickName(humanNames(p.Name)); n != nil {
		name := ehr.NormalName(toName(*n))
		out.FirstName, out.LastName, out.Name = strings.Join(name.Given, " "), name.Family, name.Text
	}
	out.Email = telecomValue(p.Telecom, "email")
	tz := extensionCode(p.Extension, TimezoneExtension)
	for _, r := range roles {
		if r.Active != nil && !*r.Active {
			continue
		}
		if tz == "" {
			tz = extensionCode(r.Extension, TimezoneExtension)
		}
		for _, sp := range r.Specialty {
			if text := conceptText([]concept{sp}); text != "" && !slices.Contains(out.specialties, text) {
				out.specialties = append(out.specialties, text)
			}
		}
		for _, l := range r.Location {
			if typ, id, ok := splitReference(l.Reference); ok && typ == "Location" && !slices.Contains(out.LocationIDs, id) {
				out.LocationIDs = append(out.LocationIDs, id)
			}
		}
	}
	if len(out.specialties) > 0 {
		out.Specialty = out.specialties[0]
	}
	out.Timezone = timezone(tz, out.ID, log)
	return out
}

// fhirAgent converts an agent into a Practitioner (name, e-mail, time zone
// extension) and one PractitionerRole (specialty text, locations) that
// refers to it.
func fhirAgent(a ehr.Agent) (practitioner, practitionerRole) {
	p := practitioner{ResourceType: "Practitioner", ID: a.ID}
	if a.Name != "" || a.FirstName != "" || a.LastName != "" {
		n := name{Text: a.Name, Family: a.LastName}
		if a.FirstName != "" {
			n.Given = []string{a.FirstName}
		}
		p.Name = []name{n}
	}
	if a.Email != "" {
		p.Telecom = []telecom{{System: "email", Value: a.Email}}
	}
	if a.Timezone != "" {
		p.Extension = []extension{{URL: TimezoneExtension, ValueCode: a.Timezone}}
	}
	r := practitionerRole{ResourceType: "PractitionerRole", Practitioner: reference{Reference: "Practitioner/" + a.ID}}
	if a.Specialty != "" {
		r.Specialty = []concept{{Text: a.Specialty}}
	}
	for _, l := range a.LocationIDs {
		r.Location = append(r.Location, reference{Reference: "Location/" + l})
	}
	return p, r
}

// timezone checks an IANA zone name; "" or a zone that does not load is
// UTC (logged when it was set).
func timezone(tz, agentID string, log *slog.Logger) string {
	tz = strings.TrimSpace(tz)
	if tz == "" {
		return "UTC"
	}
	if _, err := time.LoadLocation(tz); err != nil || strings.EqualFold(tz, "local") {
		log.Warn("fhir: unknown time zone of a practitioner, UTC used",
			slog.String("practitioner", clipN(agentID, 64)), slog.String("timezone", clipN(tz, 64)))
		return "UTC"
	}
	return tz
}

func humanNames(ns []name) []humanName {
	out := make([]humanName, len(ns))
	for i, n := range ns {
		out[i] = humanName{Use: n.Use, Text: n.Text, Family: n.Family, Given: n.Given}
	}
	return out
}

func extensionCode(exts []extension, url string) string {
	for _, e := range exts {
		if e.URL == url {
			if v := strings.TrimSpace(e.ValueCode); v != "" {
				return v
			}
			if v := strings.TrimSpace(e.ValueString); v != "" {
				return v
			}
		}
	}
	return ""
}

// conceptText is the text of the first concept that has one: a coding's
// display, else its text.
func conceptText(cs []concept) string {
	for _, c := range cs {
		for _, cd := range c.Coding {
			if d := strings.TrimSpace(cd.Display); d != "" {
				return d
			}
		}
		if t := strings.TrimSpace(c.Text); t != "" {
			return t
		}
	}
	return ""
}

func telecomValue(ts []telecom, system string) string {
	for _, t := range ts {
		if strings.EqualFold(strings.TrimSpace(t.System), system) {
			if v := strings.TrimSpace(t.Value); v != "" {
				return v
			}
		}
	}
	return ""
}

// splitReference reads a literal reference to a resource — "Type/id",
// optionally absolute and with a /_history/version — into its type and
// id. Contained ("#x"), conditional and malformed references are not.
func splitReference(ref string) (typ, id string, ok bool) {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "#") || strings.ContainsAny(ref, "?#") {
		return "", "", false
	}
	parts := strings.Split(ref, "/")
	if n := len(parts); n >= 4 && parts[n-2] == "_history" {
		parts = parts[:n-2]
	}
	n := len(parts)
	if n < 2 {
		return "", "", false
	}
	typ, id = parts[n-2], parts[n-1]
	if !validID(id) || typ == "" || typ[0] < 'A' || typ[0] > 'Z' {
		return "", "", false
	}
	return typ, id, true
}

// validID reports whether s is a FHIR logical id: 1 to 64 letters, digits,
// '-' and '.'. Ids from callers are checked with it before they go into a
// path or a search value.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// instant reads a FHIR instant or dateTime with a time and an offset;
// anything else is the zero time. The offset is kept.
func instant(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}
	}
	return t
}

// formatInstant writes t as a FHIR instant with its offset ("" for the
// zero time).
func formatInstant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}
