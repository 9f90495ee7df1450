package clamdtest

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// The names clamd reports for the signatures of the database Start writes.
// clamd appends ".UNOFFICIAL" to every signature that does not come from
// an official, signed database.
const (
	// SigEICAR is the detection of the EICAR test string, anywhere in the
	// stream (an .ndb body signature).
	SigEICAR = sigEICAR + ".UNOFFICIAL"
	// SigGenerated is the detection of exactly the bytes of Generated (an
	// .hdb signature: MD5 and size of the whole stream).
	SigGenerated = sigGenerated + ".UNOFFICIAL"
)

// The names in the database files.
const (
	sigEICAR     = "Carebridge.Test.EICAR"
	sigGenerated = "Carebridge.Test.Generated"
)

// The EICAR anti-malware test file, in two halves so that this source file
// does not hold the string a scanner looks for.
const (
	eicarHead = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-`
	eicarTail = `STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`
)

// EICAR returns the EICAR test string (68 bytes of printable ASCII, so it
// also passes for a .txt upload). clamd reports it as SigEICAR wherever it
// appears in a stream, so a file that carries it inside (a PNG with the
// string after its header) is detected too.
func EICAR() []byte {
	return []byte(eicarHead + eicarTail)
}

// generatedSize is the length of Generated.
const generatedSize = 4096

// generatedHeader starts Generated so that it passes for a PDF by its
// leading bytes (the service's type check); the rest is not a PDF.
const generatedHeader = "%PDF-1.4\n%"

// Generated returns the same 4 KiB on every call: generatedHeader, then
// pseudo-random bytes from a fixed seed (SHA-256 in counter mode). clamd
// reports exactly these bytes as SigGenerated; a stream that differs in
// any byte or in length is not detected by that signature.
func Generated() []byte {
	b := make([]byte, 0, generatedSize+sha256.Size)
	b = append(b, generatedHeader...)
	var block [8 + len("carebridge clamdtest")]byte
	copy(block[8:], "carebridge clamdtest")
	for n := uint64(0); len(b) < generatedSize; n++ {
		binary.BigEndian.PutUint64(block[:8], n)
		sum := sha256.Sum256(block[:])
		b = append(b, sum[:]...)
	}
	return b[:generatedSize]
}

// writeDatabase writes into dir the signature database: carebridge.ndb
// with the body signature of the EICAR string and carebridge.hdb with the
// hash of Generated. clamd loads a directory of such files without any
// official database (main.cvd, daily.cvd) as long as one signature is
// there.
func writeDatabase(dir string) error {
	ndb := fmt.Sprintf("%s:0:*:%s\n", sigEICAR, hex.EncodeToString(EICAR()))
	gen := Generated()
	hdb := fmt.Sprintf("%x:%d:%s\n", md5.Sum(gen), len(gen), sigGenerated)
	for name, content := range map[string]string{"carebridge.ndb": ndb, "carebridge.hdb": hdb} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}
