package ehr

// maxAppointmentIDLen bounds an appointment id.
const maxAppointmentIDLen = 128

// ParseAppointmentID checks the syntax of an appointment id: 1 to 128
// ASCII letters, digits, '.', '_', ':' and '-', which holds every id an
// EHR adapter answers with (a FHIR logical id is a stricter form). Anything
// else names no appointment: ErrAppointmentNotFound.
func ParseAppointmentID(s string) (string, error) {
	if len(s) == 0 || len(s) > maxAppointmentIDLen {
		return "", ErrAppointmentNotFound
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return "", ErrAppointmentNotFound
		}
	}
	return s, nil
}
