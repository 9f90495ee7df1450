package core

import (
	"regexp"
	"testing"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewUUID_IsAFreshVersion4UUID(t *testing.T) {
	a, b := NewUUID(), NewUUID()
	if a == b || !uuidV4.MatchString(a) || !uuidV4.MatchString(b) {
		t.Errorf("uuids %s %s", a, b)
	}
}
