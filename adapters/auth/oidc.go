package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/coreos/go-oidc/v3/oidc"
)

// NewOIDC returns a Verifier for tokens issued by issuerURL for audience.
//
// It fetches the discovery document (issuerURL +
// "/.well-known/openid-configuration") once, now, with ctx; the issuer it
// names must equal issuerURL exactly. Signing keys come from the advertised
// jwks_uri, are cached, and are refetched when a token names a key that is
// not cached (the OIDC rotation rule), never for a token a cached key
// refuses, and at most once per refetchPause when a refetch did not bring
// the key a token named (keySet). The accepted algorithms are the
// asymmetric ones the issuer advertises.
//
// When the issuer cannot be reached or its document is unusable, NewOIDC
// returns an error naming the issuer; the caller decides whether to retry or
// stop. ctx bounds discovery only; later key fetches use the HTTP client's
// timeout.
func NewOIDC(ctx context.Context, issuerURL, audience string, opts ...Option) (*Verifier, error) {
	if err := checkIssuerURL(issuerURL); err != nil {
		return nil, err
	}
	if audience == "" {
		return nil, errors.New("oidc audience is empty")
	}
	o := buildOptions(opts)
	ctx = oidc.ClientContext(ctx, o.client)

	provider, err := oidc.NewProvider(ctx, issuerURL)
	if err != nil {
		return nil, fmt.Errorf("oidc discovery for issuer %q: %w", issuerURL, err)
	}
	var meta struct {
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&meta); err != nil {
		return nil, fmt.Errorf("oidc discovery for issuer %q: %w", issuerURL, err)
	}
	if meta.JWKSURI == "" {
		return nil, fmt.Errorf("oidc discovery for issuer %q: no jwks_uri", issuerURL)
	}
	algs := allowedAlgs(meta.Algs)
	keys := newKeySet(meta.JWKSURI, o.client, algs, o.now)
	return newVerifier(issuerURL, keys, audience, algs, o), nil
}

func checkIssuerURL(issuerURL string) error {
	if issuerURL == "" {
		return errors.New("oidc issuer URL is empty")
	}
	u, err := url.Parse(issuerURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("oidc issuer URL %q is not an absolute http(s) URL", issuerURL)
	}
	return nil
}
