package auth_test

import (
	"testing"

	"github.com/carebridge/carebridge/adapters/auth"
)

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.2:8080", true},
		{"localhost:0", true},
		{"LOCALHOST:8080", true},
		{"[::1]:8080", true},
		{"[::ffff:127.0.0.1]:8080", true},

		{":8080", false},
		{"0.0.0.0:80", false},
		{"[::]:8080", false},
		{"10.0.0.5:8080", false},
		{"192.168.1.10:8080", false},
		{"example.com:8080", false},
		{"localhost.example.com:8080", false},
		{"127.0.0.1", false}, // no port: not a listen address
		{"localhost", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := auth.IsLoopback(tt.addr); got != tt.want {
				t.Fatalf("IsLoopback(%q) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}
