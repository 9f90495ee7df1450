package clamd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrStreamTooLong is the cause of a scan that clamd refused because the
// stream passed its StreamMaxLength ("INSTREAM size limit exceeded").
// Raise StreamMaxLength in clamd.conf to at least MAX_UPLOAD_BYTES.
var ErrStreamTooLong = errors.New("clamd: stream longer than clamd's StreamMaxLength (INSTREAM size limit exceeded)")

var (
	// errDaemon is the cause of a reply "<message> ERROR".
	errDaemon = errors.New("clamd answered an error")
	// errGarbage is the cause of a reply that is not the protocol's.
	errGarbage = errors.New("clamd answered something unexpected")
	// errNoReply is the cause of a connection closed before the reply.
	errNoReply = errors.New("clamd closed the connection before its reply ended")
)

const (
	// maxReply bounds a reply: clamd's are a line; a peer that sends more
	// without a NUL is not clamd.
	maxReply = 4096
	// sizeLimitReply is clamd's answer to a stream past StreamMaxLength.
	sizeLimitReply = "INSTREAM size limit exceeded. ERROR"
)

// readReply reads one NUL-terminated reply (at most maxReply bytes) and
// returns it without the NUL.
func readReply(r io.Reader) (string, error) {
	var buf []byte
	var tmp [512]byte
	for {
		n, err := r.Read(tmp[:])
		buf = append(buf, tmp[:n]...)
		if i := bytes.IndexByte(buf, 0); i >= 0 {
			return string(buf[:i]), nil
		}
		if len(buf) > maxReply {
			return "", fmt.Errorf("%w: %d bytes without a terminator: %q", errGarbage, len(buf), clip(string(buf)))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(buf) == 0 {
					return "", errNoReply
				}
				return "", fmt.Errorf("%w: %q and no terminator", errNoReply, clip(string(buf)))
			}
			return "", err
		}
	}
}

// parseReply reads clamd's answer to INSTREAM: the signature that matched,
// "" for a clean file, or the reason there is no verdict.
func parseReply(reply string) (signature string, err error) {
	switch {
	case reply == "stream: OK":
		return "", nil
	case reply == sizeLimitReply:
		return "", ErrStreamTooLong
	case strings.HasSuffix(reply, " ERROR"):
		return "", fmt.Errorf("%w: %q", errDaemon, clip(reply))
	}
	if rest, ok := strings.CutPrefix(reply, "stream: "); ok {
		if sig, ok := strings.CutSuffix(rest, " FOUND"); ok && validSignature(sig) {
			return sig, nil
		}
	}
	return "", fmt.Errorf("%w: %q", errGarbage, clip(reply))
}

// validSignature accepts what a ClamAV signature name can be: printable
// UTF-8 without spaces, such as "Win.Test.EICAR_HDB-1" or, with
// ExtendedDetectionInfo, "Eicar-Signature(44d88612…:68)".
func validSignature(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || isControl(r)
	})
}

func isControl(r rune) bool { return unicode.IsControl(r) }

// clip shortens what a peer sent for an error message.
func clip(s string) string {
	const n = 120
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
