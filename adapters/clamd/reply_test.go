package clamd

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func TestParseReply(t *testing.T) {
	for _, tc := range []struct {
		reply, sig string
		err        error
	}{
		{"stream: OK", "", nil},
		{"stream: Win.Test.EICAR_HDB-1 FOUND", "Win.Test.EICAR_HDB-1", nil},
		{"stream: Eicar-Signature(44d88612fea8a8f36de82e1278abb02f:68) FOUND", "Eicar-Signature(44d88612fea8a8f36de82e1278abb02f:68)", nil},
		{"INSTREAM size limit exceeded. ERROR", "", ErrStreamTooLong},
		{"stream: Can't allocate memory ERROR", "", errDaemon},
		{"COMMAND READ TIMED OUT ERROR", "", errDaemon},
		{"", "", errGarbage},
		{"stream: ", "", errGarbage},
		{"stream:  FOUND", "", errGarbage},
		{"stream: Two Words FOUND", "", errGarbage},
		{"stream: OK ", "", errGarbage},
		{"stream: Bad\x01Sig FOUND", "", errGarbage},
		{"stream: \xff FOUND", "", errGarbage},
		{"1: stream: OK", "", errGarbage},
		{"/tmp/x: OK", "", errGarbage},
		{"PONG", "", errGarbage},
	} {
		sig, err := parseReply(tc.reply)
		if sig != tc.sig || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("parseReply(%q) = %q, %v; want %q, %v", tc.reply, sig, err, tc.sig, tc.err)
		}
	}
}

// FuzzParseReply: any reply parses without panicking; a verdict is either
// "clean" for exactly "stream: OK" or a printable signature without
// spaces that the reply names, and a failure carries no signature.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{"stream: OK", "stream: Win.Test.EICAR_HDB-1 FOUND", "INSTREAM size limit exceeded. ERROR",
		"stream: x ERROR", "stream:  FOUND", "stream: a b FOUND", "", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		sig, err := parseReply(reply)
		switch {
		case err != nil:
			if sig != "" {
				t.Fatalf("%q: error %v and signature %q", reply, err, sig)
			}
		case sig == "":
			if reply != "stream: OK" {
				t.Fatalf("%q: clean", reply)
			}
		default:
			if reply != "stream: "+sig+" FOUND" || !utf8.ValidString(sig) ||
				strings.ContainsFunc(sig, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				t.Fatalf("%q: signature %q", reply, sig)
			}
		}
	})
}

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in    string
		reply string
		err   error
	}{
		{"stream: OK\x00", "stream: OK", nil},
		{"PONG\x00trailing", "PONG", nil},
		{"\x00", "", nil},
		{"", "", errNoReply},
		{"stream: O", "", errNoReply},
		{strings.Repeat("x", maxReply+1), "", errGarbage},
	} {
		// One byte a read: the terminator may come in any read.
		got, err := readReply(iotest.OneByteReader(strings.NewReader(tc.in)))
		if got != tc.reply || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("readReply(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.reply, tc.err)
		}
	}
	if _, err := readReply(iotest.ErrReader(io.ErrUnexpectedEOF)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a read error: %v", err)
	}
}
