package auth

import (
	"slices"
	"testing"
)

func TestAllowedAlgs_KeepsOnlyAsymmetricAdvertisedAlgorithms(t *testing.T) {
	tests := []struct {
		name       string
		advertised []string
		want       []string
	}{
		{"RS256 only", []string{"RS256"}, []string{"RS256"}},
		{"HMAC and none dropped", []string{"none", "HS256", "RS256", "HS512", "ES256"}, []string{"RS256", "ES256"}},
		{"duplicates dropped", []string{"RS256", "RS256"}, []string{"RS256"}},
		{"nothing advertised", nil, asymmetricAlgs()},
		{"only symmetric advertised", []string{"HS256", "none"}, asymmetricAlgs()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := allowedAlgs(tt.advertised)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("allowedAlgs(%v) = %v, want %v", tt.advertised, got, tt.want)
			}
			for _, a := range got {
				if a == "none" || a[0] == 'H' {
					t.Fatalf("allowedAlgs returned %q", a)
				}
			}
		})
	}
}
