package ehr

import (
	"reflect"
	"testing"
)

func TestNormalContactPoint_TrimsAndDropsEmptyValues(t *testing.T) {
	tests := []struct {
		in     ContactPoint
		want   ContactPoint
		wantOK bool
	}{
		{ContactPoint{" phone ", " +1 202 ", " home "}, ContactPoint{"phone", "+1 202", "home"}, true},
		{ContactPoint{"email", "   ", "work"}, ContactPoint{"email", "", "work"}, false},
		{ContactPoint{}, ContactPoint{}, false},
	}
	for _, tt := range tests {
		got, ok := NormalContactPoint(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("NormalContactPoint(%+v) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestNormalAddress_TrimsAndDropsEmptyAddresses(t *testing.T) {
	tests := []struct {
		in     Address
		want   Address
		wantOK bool
	}{
		{Address{Line: []string{" 1 Main St ", " ", ""}, City: " Springfield "},
			Address{Line: []string{"1 Main St"}, City: "Springfield"}, true},
		{Address{Country: " US "}, Address{Country: "US"}, true},
		{Address{Line: []string{" "}, City: " ", PostalCode: "\t"}, Address{}, false},
	}
	for _, tt := range tests {
		got, ok := NormalAddress(tt.in)
		if !reflect.DeepEqual(got, tt.want) || ok != tt.wantOK {
			t.Errorf("NormalAddress(%+v) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}
