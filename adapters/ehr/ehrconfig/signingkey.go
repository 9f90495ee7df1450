package ehrconfig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// SMART Backend Services (private_key_jwt): the client authenticates to the
// token endpoint with a JWT signed by its private key (RFC 7523), whose
// public key the EHR holds. The file names the algorithm and gives the key;
// ehrhttp signs with them.
const (
	// Signing algorithms of the client assertion.
	AlgRS384 = "RS384"
	AlgES384 = "ES384"

	// MinRSABits is the smallest RSA key accepted for RS384.
	MinRSABits = 2048
)

// ParseSigningKey reads a PEM private key for alg: an RSA key of at least
// MinRSABits bits for RS384, a P-384 EC key for ES384. PKCS #8 ("PRIVATE
// KEY"), PKCS #1 ("RSA PRIVATE KEY") and SEC 1 ("EC PRIVATE KEY", possibly
// after an "EC PARAMETERS" block) are read; encrypted PEM is refused. Its
// errors never quote the key.
func ParseSigningKey(pemText, alg string) (crypto.Signer, error) {
	if alg != AlgRS384 && alg != AlgES384 {
		return nil, fmt.Errorf("algorithm %q is not RS384 or ES384", alg)
	}
	rest := []byte(pemText)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("is not a PEM private key")
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case "EC PARAMETERS":
			continue
		case "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("is an encrypted PEM key; give it unencrypted (enc:v1: protects it)")
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			return nil, fmt.Errorf("is a PEM %q block, not a private key", block.Type)
		}
		if block.Headers["Proc-Type"] != "" {
			return nil, errors.New("is an encrypted PEM key; give it unencrypted (enc:v1: protects it)")
		}
		if err != nil {
			return nil, fmt.Errorf("is not a valid %s PEM block", block.Type)
		}
		return checkKey(key, alg)
	}
}

func checkKey(key any, alg string) (crypto.Signer, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if alg != AlgRS384 {
			return nil, fmt.Errorf("is an RSA key, which %s cannot use (RS384 can)", alg)
		}
		if n := k.N.BitLen(); n < MinRSABits {
			return nil, fmt.Errorf("is a %d-bit RSA key; at least %d bits are required", n, MinRSABits)
		}
		return k, nil
	case *ecdsa.PrivateKey:
		if alg != AlgES384 {
			return nil, fmt.Errorf("is an EC key, which %s cannot use (ES384 can)", alg)
		}
		if k.Curve != elliptic.P384() {
			return nil, fmt.Errorf("is an EC key on %s; ES384 needs P-384", k.Curve.Params().Name)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("is a %T key; %s needs %s", key, alg, map[string]string{AlgRS384: "RSA", AlgES384: "EC P-384"}[alg])
	}
}
