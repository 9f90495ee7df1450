package segcrypt_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/carebridge/carebridge/core/storage/segcrypt"
)

const (
	seg    = segcrypt.SegmentSize
	sealed = segcrypt.SegmentSize + segcrypt.Overhead
)

// testKey returns a deterministic 32-byte key derived from n.
func testKey(n byte) []byte {
	k := make([]byte, segcrypt.KeySize)
	for i := range k {
		k[i] = n + byte(i)*7
	}
	return k
}

// testPlain returns n deterministic pseudo-random bytes.
func testPlain(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// refCipher implements the format from its specification, independently of
// the package, to pin it.
func refCipher(t testing.TB, key []byte, i uint64, last bool) (cipher.AEAD, []byte, []byte) {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	var flag byte
	if last {
		flag = 1
	}
	nonce := make([]byte, 12)
	binary.BigEndian.PutUint64(nonce, i)
	nonce[11] = flag
	ad := binary.BigEndian.AppendUint64([]byte("carebridge/segcrypt/v1"), i)
	ad = append(ad, flag)
	return aead, nonce, ad
}

func refEncrypt(t testing.TB, key, plain []byte) []byte {
	t.Helper()
	var out []byte
	n := int(segcrypt.SegmentCount(int64(len(plain))))
	for i := range n {
		chunk := plain[i*seg : min((i+1)*seg, len(plain))]
		aead, nonce, ad := refCipher(t, key, uint64(i), i == n-1)
		out = aead.Seal(out, nonce, chunk, ad)
	}
	return out
}

// refDecrypt opens ct (starting at segment first, ending with final) by the
// specification: it returns the plaintext of the authentic leading segments
// and whether the whole of ct is valid.
func refDecrypt(t testing.TB, key, ct []byte, first, final uint64) ([]byte, bool) {
	t.Helper()
	var out []byte
	for i := first; ; i++ {
		last := i == final
		n := sealed
		if last {
			if len(ct) > sealed || len(ct) < segcrypt.Overhead {
				return out, false
			}
			n = len(ct)
		} else if len(ct) < sealed {
			return out, false
		}
		aead, nonce, ad := refCipher(t, key, i, last)
		p, err := aead.Open(nil, nonce, ct[:n], ad)
		if err != nil {
			return out, false
		}
		out = append(out, p...)
		ct = ct[n:]
		if last {
			return out, true
		}
	}
}

func encrypt(t testing.TB, key, plain []byte) []byte {
	t.Helper()
	r, err := segcrypt.EncryptReader(bytes.NewReader(plain), key)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("encrypt: %v", err)
	}
	return ct
}

// decrypt decrypts a whole file and returns what the reader yielded and
// its error.
func decrypt(t testing.TB, key, ct []byte, plainSize int64) ([]byte, error) {
	t.Helper()
	r, err := segcrypt.DecryptReader(bytes.NewReader(ct), key, 0, segcrypt.FinalSegment(plainSize))
	if err != nil {
		t.Fatal(err)
	}
	return io.ReadAll(r)
}

func TestSegmentCount(t *testing.T) {
	tests := []struct {
		plain, segments, cipher int64
	}{
		{-1, 1, 16},
		{0, 1, 16},
		{1, 1, 17},
		{seg - 1, 1, seg + 15},
		{seg, 1, seg + 16},
		{seg + 1, 2, seg + 1 + 32},
		{3 * seg, 3, 3*seg + 48},
		{100 << 20, 1600, 100<<20 + 1600*16},
	}
	for _, tt := range tests {
		if got := segcrypt.SegmentCount(tt.plain); got != tt.segments {
			t.Errorf("SegmentCount(%d) = %d, want %d", tt.plain, got, tt.segments)
		}
		if got := segcrypt.CiphertextSize(tt.plain); got != tt.cipher {
			t.Errorf("CiphertextSize(%d) = %d, want %d", tt.plain, got, tt.cipher)
		}
		if got := segcrypt.FinalSegment(tt.plain); got != uint64(tt.segments-1) {
			t.Errorf("FinalSegment(%d) = %d, want %d", tt.plain, got, tt.segments-1)
		}
	}
}

func TestEncryptReader_MatchesSpecification(t *testing.T) {
	key := testKey(1)
	for _, n := range []int{0, 1, seg - 1, seg, seg + 1, 2*seg + 5} {
		plain := testPlain(n, uint64(n))
		if got, want := encrypt(t, key, plain), refEncrypt(t, key, plain); !bytes.Equal(got, want) {
			t.Errorf("size %d: ciphertext differs from the specification", n)
		}
	}
	// A pinned vector guards the format against accidental change.
	got := hex.EncodeToString(encrypt(t, key, []byte("hello")))
	const want = "0bf4f0383eab68065a549bdfb748eb2e9b95555c73"
	if got != want {
		t.Errorf("ciphertext of %q = %s, want %s", "hello", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	key := testKey(2)
	sizes := []int{0, 1, 2, seg - 1, seg, seg + 1, 2*seg - 1, 2 * seg, 3 * seg, 3*seg + 1}
	r := rand.New(rand.NewPCG(7, 7))
	for range 4 {
		sizes = append(sizes, r.IntN(3<<20))
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			plain := testPlain(n, uint64(n))
			ct := encrypt(t, key, plain)
			if int64(len(ct)) != segcrypt.CiphertextSize(int64(n)) {
				t.Fatalf("ciphertext is %d bytes, want %d", len(ct), segcrypt.CiphertextSize(int64(n)))
			}
			got, err := decrypt(t, key, ct, int64(n))
			if err != nil {
				t.Fatalf("decrypt: %v", err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatal("plaintext differs after the round trip")
			}
		})
	}
}

// TestRoundTrip_ShortReads feeds both readers through sources that return
// few bytes at a time and reads them in odd-sized chunks, by Read and by
// WriteTo.
func TestRoundTrip_ShortReads(t *testing.T) {
	key := testKey(3)
	wrappers := map[string]func(io.Reader) io.Reader{
		"OneByte": iotest.OneByteReader,
		"Half":    iotest.HalfReader,
		"DataErr": iotest.DataErrReader,
		"Odd":     func(r io.Reader) io.Reader { return &chunkReader{r: r, n: 4093} },
	}
	for _, n := range []int{0, 1, seg - 1, seg, seg + 1, 2*seg + 3} {
		plain := testPlain(n, uint64(n))
		want := refEncrypt(t, key, plain)
		for name, wrap := range wrappers {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				enc, err := segcrypt.EncryptReader(wrap(bytes.NewReader(plain)), key)
				if err != nil {
					t.Fatal(err)
				}
				ct, err := io.ReadAll(wrap(enc)) // Read path
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(ct, want) {
					t.Fatal("ciphertext differs")
				}
				dec, err := segcrypt.DecryptReader(wrap(bytes.NewReader(ct)), key, 0, segcrypt.FinalSegment(int64(n)))
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if _, err := io.Copy(&got, dec); err != nil { // WriteTo path
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), plain) {
					t.Fatal("plaintext differs")
				}
			})
		}
	}
}

// readBy reads r to its end with reads of n bytes.
func readBy(r io.Reader, n int) ([]byte, error) {
	var out []byte
	buf := make([]byte, n)
	for {
		m, err := r.Read(buf)
		out = append(out, buf[:m]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	return c.r.Read(p[:min(len(p), c.n)])
}

func TestEncryptReader_WriteToMatchesRead(t *testing.T) {
	key := testKey(4)
	plain := testPlain(3*seg+77, 1)
	enc, err := segcrypt.EncryptReader(bytes.NewReader(plain), key)
	if err != nil {
		t.Fatal(err)
	}
	// Start with Read, then switch to WriteTo halfway through a segment.
	head := make([]byte, seg/2)
	if _, err := io.ReadFull(enc, head); err != nil {
		t.Fatal(err)
	}
	var rest bytes.Buffer
	if _, err := io.Copy(&rest, enc); err != nil {
		t.Fatal(err)
	}
	if got := append(head, rest.Bytes()...); !bytes.Equal(got, refEncrypt(t, key, plain)) {
		t.Fatal("ciphertext differs")
	}
	if n, err := enc.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the end = %d, %v; want 0, EOF", n, err)
	}
}

func TestEncryptReader_PassesThroughSourceErrors(t *testing.T) {
	key := testKey(5)
	boom := errors.New("boom")
	for _, cause := range []error{boom, io.ErrUnexpectedEOF} {
		for _, after := range []int{0, 1, seg, seg + 1, 2*seg + 9} {
			src := io.MultiReader(bytes.NewReader(testPlain(after, 1)), iotest.ErrReader(cause))
			enc, err := segcrypt.EncryptReader(src, key)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(enc)
			if !errors.Is(err, cause) {
				t.Errorf("%v after %d bytes: err = %v, want it to wrap the source error", cause, after, err)
			}
			if errors.Is(err, segcrypt.ErrCorrupt) {
				t.Errorf("source error reported as ErrCorrupt: %v", err)
			}
			// No final segment may be emitted for an unfinished source.
			if len(got) > after/seg*sealed {
				t.Errorf("%d bytes of ciphertext emitted for %d bytes of plaintext before the error", len(got), after)
			}
		}
	}
}

func TestDecryptReader_PassesThroughSourceErrors(t *testing.T) {
	key := testKey(6)
	plain := testPlain(3*seg, 2)
	ct := encrypt(t, key, plain)
	boom := errors.New("boom")
	for _, cause := range []error{boom, io.ErrUnexpectedEOF} {
		src := io.MultiReader(bytes.NewReader(ct[:sealed+10]), iotest.ErrReader(cause))
		dec, err := segcrypt.DecryptReader(src, key, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(dec)
		if !errors.Is(err, cause) || errors.Is(err, segcrypt.ErrCorrupt) {
			t.Errorf("err = %v, want it to wrap %v and not be ErrCorrupt", err, cause)
		}
		if !bytes.Equal(got, plain[:seg]) {
			t.Errorf("got %d bytes, want the first segment only", len(got))
		}
	}
}

func TestReaders_RejectBadArguments(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := segcrypt.EncryptReader(bytes.NewReader(nil), make([]byte, n)); !errors.Is(err, segcrypt.ErrKeySize) {
			t.Errorf("EncryptReader with a %d-byte key: err = %v, want ErrKeySize", n, err)
		}
		if _, err := segcrypt.DecryptReader(bytes.NewReader(nil), make([]byte, n), 0, 0); !errors.Is(err, segcrypt.ErrKeySize) {
			t.Errorf("DecryptReader with a %d-byte key: err = %v, want ErrKeySize", n, err)
		}
	}
	if _, err := segcrypt.DecryptReader(bytes.NewReader(nil), testKey(0), 2, 1); err == nil {
		t.Error("DecryptReader with first > final: no error")
	}
	if _, err := segcrypt.DecryptRange(bytes.NewReader(nil), testKey(0), segcrypt.Range{Skip: -1}); err == nil {
		t.Error("DecryptRange with a negative skip: no error")
	}
}

func TestPlainRange(t *testing.T) {
	tests := []struct {
		size, start, end int64
		want             segcrypt.Range
	}{
		{1, 0, 0, segcrypt.Range{First: 0, Final: 0, Offset: 0, Length: 17, Skip: 0, Count: 1}},
		{seg, 0, seg - 1, segcrypt.Range{First: 0, Final: 0, Offset: 0, Length: sealed, Skip: 0, Count: seg}},
		{seg + 1, seg, seg, segcrypt.Range{First: 1, Final: 1, Offset: sealed, Length: 17, Skip: 0, Count: 1}},
		{3 * seg, seg - 1, seg, segcrypt.Range{First: 0, Final: 2, Offset: 0, Length: 2 * sealed, Skip: seg - 1, Count: 2}},
		{3*seg + 5, seg + 3, seg + 3, segcrypt.Range{First: 1, Final: 3, Offset: sealed, Length: sealed, Skip: 3, Count: 1}},
		{3*seg + 5, 2 * seg, 3*seg + 4, segcrypt.Range{First: 2, Final: 3, Offset: 2 * sealed, Length: sealed + 21, Skip: 0, Count: seg + 5}},
	}
	for _, tt := range tests {
		got, err := segcrypt.PlainRange(tt.size, tt.start, tt.end)
		if err != nil || got != tt.want {
			t.Errorf("PlainRange(%d, %d, %d) = %+v, %v; want %+v", tt.size, tt.start, tt.end, got, err, tt.want)
		}
	}
	for _, bad := range [][3]int64{{0, 0, 0}, {10, -1, 3}, {10, 5, 4}, {10, 0, 10}, {10, 10, 10}} {
		if _, err := segcrypt.PlainRange(bad[0], bad[1], bad[2]); !errors.Is(err, segcrypt.ErrRange) {
			t.Errorf("PlainRange(%d, %d, %d): err = %v, want ErrRange", bad[0], bad[1], bad[2], err)
		}
	}
}

// TestPlainRange_DecryptsEveryRange serves sampled ranges (all pairs of
// interesting offsets, plus random ones) from only the fetched ciphertext,
// both through DecryptRange and through DecryptReader plus skip and limit.
func TestPlainRange_DecryptsEveryRange(t *testing.T) {
	key := testKey(8)
	for _, size := range []int64{1, seg, 3*seg + 100} {
		plain := testPlain(int(size), uint64(size))
		ct := encrypt(t, key, plain)
		var points []int64
		for _, p := range []int64{0, 1, seg - 1, seg, seg + 1, 2*seg - 1, 2 * seg, 3*seg - 1, 3 * seg, size - 2, size - 1} {
			if p >= 0 && p < size {
				points = append(points, p)
			}
		}
		r := rand.New(rand.NewPCG(uint64(size), 1))
		type span struct{ start, end int64 }
		var spans []span
		for _, a := range points {
			for _, b := range points {
				if a <= b {
					spans = append(spans, span{a, b})
				}
			}
		}
		for range 50 {
			a, b := r.Int64N(size), r.Int64N(size)
			spans = append(spans, span{min(a, b), max(a, b)})
		}
		for _, s := range spans {
			rg, err := segcrypt.PlainRange(size, s.start, s.end)
			if err != nil {
				t.Fatal(err)
			}
			if rg.Offset < 0 || rg.Offset+rg.Length > int64(len(ct)) || rg.Offset%sealed != 0 {
				t.Fatalf("range %d-%d of %d: fetch %d+%d outside the %d-byte ciphertext", s.start, s.end, size, rg.Offset, rg.Length, len(ct))
			}
			fetched := ct[rg.Offset : rg.Offset+rg.Length]
			want := plain[s.start : s.end+1]

			dr, err := segcrypt.DecryptRange(bytes.NewReader(fetched), key, rg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(dr)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("DecryptRange %d-%d of %d: %d bytes, %v; want %d bytes", s.start, s.end, size, len(got), err, len(want))
			}
			// Reads of whole segments or more, which open straight into
			// the reader's buffer.
			for _, n := range []int{seg, seg + 1, 4 * seg} {
				dr, _ := segcrypt.DecryptRange(bytes.NewReader(fetched), key, rg)
				got, err := readBy(dr, n)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("DecryptRange %d-%d of %d, reads of %d: %d bytes, %v; want %d bytes", s.start, s.end, size, n, len(got), err, len(want))
				}
			}

			d, err := segcrypt.DecryptReader(bytes.NewReader(fetched), key, rg.First, rg.Final)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.CopyN(io.Discard, d, rg.Skip); err != nil {
				t.Fatal(err)
			}
			got, err = io.ReadAll(io.LimitReader(d, rg.Count))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("DecryptReader %d-%d of %d: %d bytes, %v; want %d bytes", s.start, s.end, size, len(got), err, len(want))
			}
		}
	}
}

// checkCorrupt decrypts ct and requires ErrCorrupt, with only authentic
// whole segments before the fault emitted.
func checkCorrupt(t *testing.T, name string, key, ct, plain []byte, final uint64) {
	t.Helper()
	for _, how := range []string{"WriteTo", "small reads", "large reads"} {
		d, err := segcrypt.DecryptReader(bytes.NewReader(ct), key, 0, final)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		switch how {
		case "WriteTo":
			_, err = io.Copy(&got, d)
		case "small reads":
			_, err = io.Copy(&got, iotest.HalfReader(d))
		default: // whole segments opened into the reader's buffer
			var b []byte
			b, err = readBy(d, 3*seg)
			got.Write(b)
		}
		if !errors.Is(err, segcrypt.ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
		if got.Len()%seg != 0 || got.Len() > len(plain) || !bytes.Equal(got.Bytes(), plain[:got.Len()]) {
			t.Errorf("%s: emitted %d bytes that are not whole authentic leading segments", name, got.Len())
		}
		// The error is sticky.
		if _, err2 := d.Read(make([]byte, 1)); !errors.Is(err2, segcrypt.ErrCorrupt) {
			t.Errorf("%s: second Read err = %v, want ErrCorrupt", name, err2)
		}
	}
}

func TestDecryptReader_DetectsTampering(t *testing.T) {
	key := testKey(9)
	// Every bit of a small file.
	small := testPlain(100, 3)
	ct := encrypt(t, key, small)
	for i := range ct {
		for bit := range 8 {
			bad := bytes.Clone(ct)
			bad[i] ^= 1 << bit
			d, _ := segcrypt.DecryptReader(bytes.NewReader(bad), key, 0, 0)
			got, err := io.ReadAll(d)
			if !errors.Is(err, segcrypt.ErrCorrupt) || len(got) != 0 {
				t.Fatalf("bit %d of byte %d flipped: %d bytes, err %v", bit, i, len(got), err)
			}
		}
	}
	// Sampled positions of a multi-segment file, with segment borders.
	plain := testPlain(3*seg+500, 4)
	ct = encrypt(t, key, plain)
	r := rand.New(rand.NewPCG(9, 9))
	positions := []int{0, seg - 1, seg, seg + 15, sealed - 1, sealed, 2*sealed + 3, len(ct) - 17, len(ct) - 16, len(ct) - 1}
	for range 20 {
		positions = append(positions, r.IntN(len(ct)))
	}
	for _, p := range positions {
		bad := bytes.Clone(ct)
		bad[p] ^= 1 << r.IntN(8)
		checkCorrupt(t, fmt.Sprintf("flip at %d", p), key, bad, plain, 3)
		d, _ := segcrypt.DecryptReader(bytes.NewReader(bad), key, 0, 3)
		got, _ := io.ReadAll(d)
		if want := p / sealed * seg; len(got) != want {
			t.Errorf("flip at %d: emitted %d bytes, want the %d bytes before the segment", p, len(got), want)
		}
	}
}

func TestDecryptReader_DetectsStructuralAttacks(t *testing.T) {
	key := testKey(10)
	plain := testPlain(3*seg+500, 5)
	ct := encrypt(t, key, plain)
	segs := [][]byte{ct[:sealed], ct[sealed : 2*sealed], ct[2*sealed : 3*sealed], ct[3*sealed:]}
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	other := encrypt(t, key, testPlain(10, 6)) // a final segment 0 under the same key

	tests := []struct {
		name  string
		ct    []byte
		final uint64
	}{
		{"empty", nil, 3},
		{"truncate at boundary 1", ct[:sealed], 3},
		{"truncate at boundary 3", ct[:3*sealed], 3},
		{"truncate mid segment 0", ct[:100], 3},
		{"truncate mid segment 2", ct[:2*sealed+100], 3},
		{"truncate final segment", ct[:len(ct)-1], 3},
		{"truncate final to tag", ct[:3*sealed+15], 3},
		{"drop segment 1", join(segs[0], segs[2], segs[3]), 3},
		{"drop segment 1, caller expects 3 segments", join(segs[0], segs[2], segs[3]), 2},
		{"drop final segment", join(segs[0], segs[1], segs[2]), 2},
		{"swap 1 and 2", join(segs[0], segs[2], segs[1], segs[3]), 3},
		{"swap 0 and 1", join(segs[1], segs[0], segs[2], segs[3]), 3},
		{"duplicate segment 0", join(segs[0], segs[0], segs[1], segs[2], segs[3]), 4},
		{"append a segment", join(ct, segs[1]), 3},
		{"append final again", join(ct, segs[3]), 3},
		{"append one byte", join(ct, []byte{0}), 3},
		{"append a final from elsewhere", join(ct, other), 3},
		{"final from another position", join(segs[0], segs[1], segs[2], other), 3},
		{"caller final too small", ct, 2},
		{"caller final too large", ct, 4},
	}
	for _, tt := range tests {
		checkCorrupt(t, tt.name, key, tt.ct, plain, tt.final)
	}
	checkCorrupt(t, "wrong key", testKey(11), ct, plain, 3)

	// An empty file: its one segment is a bare tag.
	empty := encrypt(t, key, nil)
	if len(empty) != segcrypt.Overhead {
		t.Fatalf("empty file: %d bytes of ciphertext", len(empty))
	}
	checkCorrupt(t, "empty file, truncated", key, empty[:15], nil, 0)
	checkCorrupt(t, "empty file, extended", key, join(empty, []byte{1}), nil, 0)
	checkCorrupt(t, "empty file, wrong key", testKey(12), empty, nil, 0)
}

// TestDecryptRange_DetectsTrailingBytes checks that a range ending in the
// final segment still rejects bytes after it.
func TestDecryptRange_DetectsTrailingBytes(t *testing.T) {
	key := testKey(13)
	plain := testPlain(seg+10, 7)
	ct := encrypt(t, key, plain)
	rg, err := segcrypt.PlainRange(int64(len(plain)), seg, seg+2)
	if err != nil {
		t.Fatal(err)
	}
	src := append(bytes.Clone(ct[rg.Offset:rg.Offset+rg.Length]), 'x')
	d, err := segcrypt.DecryptRange(bytes.NewReader(src), key, rg)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(d); !errors.Is(err, segcrypt.ErrCorrupt) || len(got) != 0 {
		t.Fatalf("got %d bytes, err %v; want none and ErrCorrupt", len(got), err)
	}
}

func TestEncryptReader_HidesPlaintext(t *testing.T) {
	key := testKey(14)
	pattern := []byte("PATIENT-RECORD-0123456789-")
	plain := bytes.Repeat(pattern, 3*seg/len(pattern))
	ct := encrypt(t, key, plain)
	if bytes.Contains(ct, pattern) || bytes.Contains(ct, pattern[:12]) {
		t.Fatal("ciphertext contains the plaintext pattern")
	}
	// Equal plaintext segments give different ciphertext segments.
	same := bytes.Repeat([]byte{'A'}, 2*seg+1)
	ct = encrypt(t, key, same)
	if bytes.Equal(ct[:seg], ct[sealed:sealed+seg]) {
		t.Fatal("equal segments encrypt alike")
	}
}

// TestReaders_AllocationsDoNotGrowWithSize checks that segments are sealed
// and opened without allocating.
func TestReaders_AllocationsDoNotGrowWithSize(t *testing.T) {
	key := testKey(15)
	small, large := testPlain(10, 1), testPlain(32*seg, 2)
	smallCT, largeCT := encrypt(t, key, small), encrypt(t, key, large)
	allocs := func(f func()) float64 { return testing.AllocsPerRun(5, f) }
	enc := func(p []byte) func() {
		return func() {
			r, _ := segcrypt.EncryptReader(bytes.NewReader(p), key)
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	dec := func(c []byte, n int) func() {
		return func() {
			r, _ := segcrypt.DecryptReader(bytes.NewReader(c), key, 0, segcrypt.FinalSegment(int64(n)))
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if a, b := allocs(enc(small)), allocs(enc(large)); b > a {
		t.Errorf("EncryptReader: %v allocations for 1 segment, %v for 32", a, b)
	}
	if a, b := allocs(dec(smallCT, len(small))), allocs(dec(largeCT, len(large))); b > a {
		t.Errorf("DecryptReader: %v allocations for 1 segment, %v for 32", a, b)
	}
}

// zeroReader yields zeros without end.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

const benchSize = 16 << 20

func BenchmarkEncryptReader(b *testing.B) {
	key := testKey(16)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		r, err := segcrypt.EncryptReader(io.LimitReader(zeroReader{}, benchSize), key)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecryptReader(b *testing.B) {
	key := testKey(17)
	ct := encrypt(b, key, make([]byte, benchSize))
	src := bytes.NewReader(ct)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(ct)
		r, err := segcrypt.DecryptReader(src, key, 0, segcrypt.FinalSegment(benchSize))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
