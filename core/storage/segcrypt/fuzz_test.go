package segcrypt_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/carebridge/carebridge/core/storage/segcrypt"
)

// FuzzDecryptReader feeds arbitrary ciphertext to DecryptReader and checks
// it against the reference decryption: it must never panic, never return a
// byte that the reference did not authenticate, and succeed exactly when
// the whole input is a valid ciphertext.
func FuzzDecryptReader(f *testing.F) {
	key := testKey(20)
	for _, n := range []int{0, 1, 100, seg + 1} {
		f.Add(encrypt(f, key, testPlain(n, uint64(n))), uint8(0), uint8(segcrypt.FinalSegment(int64(n))))
	}
	f.Add([]byte{}, uint8(0), uint8(0))
	f.Add(make([]byte, 40), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, ct []byte, first, extra uint8) {
		start := uint64(first % 4)
		final := start + uint64(extra%4)
		want, valid := refDecrypt(t, key, ct, start, final)
		for _, half := range []bool{false, true} {
			var src io.Reader = bytes.NewReader(ct)
			if half {
				src = iotest.HalfReader(src)
			}
			d, err := segcrypt.DecryptReader(src, key, start, final)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(d)
			if !bytes.HasPrefix(want, got) {
				t.Fatalf("returned %d bytes that are not an authentic prefix", len(got))
			}
			switch {
			case valid && err != nil:
				t.Fatalf("valid ciphertext rejected: %v", err)
			case valid && !bytes.Equal(got, want):
				t.Fatalf("valid ciphertext: %d bytes, want %d", len(got), len(want))
			case !valid && !errors.Is(err, segcrypt.ErrCorrupt):
				t.Fatalf("invalid ciphertext: err = %v, want ErrCorrupt", err)
			}
		}
	})
}

// FuzzRoundTrip encrypts and decrypts plaintexts of up to a few segments
// and one range of each.
func FuzzRoundTrip(f *testing.F) {
	key := testKey(21)
	f.Add([]byte("hello"), uint32(5), uint32(1), uint32(3))
	f.Add([]byte{}, uint32(0), uint32(0), uint32(0))
	f.Add([]byte("x"), uint32(seg), uint32(seg-1), uint32(seg))
	f.Add([]byte("abc"), uint32(2*seg+1), uint32(0), uint32(2*seg))
	f.Fuzz(func(t *testing.T, pattern []byte, size, a, b uint32) {
		n := int(size % (3*seg + 17))
		plain := make([]byte, n)
		if len(pattern) > 0 {
			for i := range plain {
				plain[i] = pattern[i%len(pattern)] + byte(i/len(pattern))
			}
		}
		ct := encrypt(t, key, plain)
		if int64(len(ct)) != segcrypt.CiphertextSize(int64(n)) {
			t.Fatalf("ciphertext is %d bytes, want %d", len(ct), segcrypt.CiphertextSize(int64(n)))
		}
		got, err := decrypt(t, key, ct, int64(n))
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip: %d bytes, %v", len(got), err)
		}
		if n == 0 {
			return
		}
		start, end := int64(a)%int64(n), int64(b)%int64(n)
		start, end = min(start, end), max(start, end)
		rg, err := segcrypt.PlainRange(int64(n), start, end)
		if err != nil {
			t.Fatal(err)
		}
		d, err := segcrypt.DecryptRange(bytes.NewReader(ct[rg.Offset:rg.Offset+rg.Length]), key, rg)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(d)
		if err != nil || !bytes.Equal(got, plain[start:end+1]) {
			t.Fatalf("range %d-%d: %d bytes, %v", start, end, len(got), err)
		}
	})
}
