package httpapi

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

// nested is the opening of levels levels of unit ("[" or {"a":), the most
// nesting a client can pack into a body.
func nested(unit string, levels int) []byte {
	return bytes.Repeat([]byte(unit), levels)
}

// wideObject is an object of distinct keys filling about size bytes.
func wideObject(size int) []byte {
	b := []byte("{")
	for i := 0; len(b) < size-16; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(i), 36)
		b = append(b, `":0`...)
	}
	return append(b, '}')
}

// longArray is {"query":[0,0,…]} filling about size bytes.
func longArray(size int) []byte {
	b := append([]byte(`{"query":[0`), bytes.Repeat([]byte(",0"), (size-14)/2)...)
	return append(b, "]}"...)
}

// BenchmarkRefuseDeepJSON is the cost of refusing a body of nothing but
// nesting ("[" or {"a": repeated): 10,000 and 20,000 levels (the bodies
// that took the service to hundreds of MiB) and the whole 1 MiB a body may
// hold. For comparison, two flat 1 MiB bodies the decoder refuses too: an
// object of distinct unknown keys, and an array where a string belongs.
func BenchmarkRefuseDeepJSON(b *testing.B) {
	var cases []struct {
		name string
		body []byte
	}
	add := func(name string, body []byte) {
		cases = append(cases, struct {
			name string
			body []byte
		}{name, body})
	}
	for _, levels := range []int{10000, 20000} {
		add(fmt.Sprintf("brackets/%d-levels", levels), nested("[", levels))
		add(fmt.Sprintf("objects/%d-levels", levels), nested(`{"a":`, levels))
	}
	add("brackets/1MiB", nested("[", maxJSONBytes))
	add("objects/1MiB", nested(`{"a":`, maxJSONBytes/len(`{"a":`)))
	add("wide-object/1MiB", wideObject(maxJSONBytes))
	add("long-array/1MiB", longArray(maxJSONBytes))
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if err := unmarshalStrict(c.body, &searchRequest{}); errCode(err) != "invalid_json" {
					b.Fatalf("got %v", err)
				}
			}
		})
	}
}
