package core

import (
	"crypto/rand"
	"encoding/hex"
)

// NewUUID returns a random (version 4) UUID in its canonical form,
// "xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx".
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// IsUUID reports whether s is a UUID in its 36-character 8-4-4-4-12
// hexadecimal form, in either letter case.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range []byte(s) {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// ParseID parses a positive 64-bit id written the one way Carebridge
// writes it: decimal digits only, no sign, space or leading zero, at most
// 9223372036854775807. Anything else ("+5", "05", " 5", "5.0") is no id:
// an id the service checks is always the id it stores and reports.
func ParseID(s string) (int64, bool) {
	if s == "" || len(s) > 19 || s[0] == '0' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}
