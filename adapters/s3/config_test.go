package s3_test

import (
	"strings"
	"testing"

	"github.com/carebridge/carebridge/adapters/s3"
)

func TestParseConnectionString_Accepts(t *testing.T) {
	tests := []struct {
		name, in string
		want     s3.Config
	}{
		{
			in: "s3://AKIA:secret@minio:9000?region=us-east-1&secure=false&bucket_prefix=cb-",
			want: s3.Config{Endpoint: "minio:9000", Region: "us-east-1", AccessKey: "AKIA", SecretKey: "secret",
				Secure: false, BucketPrefix: "cb-"},
		},
		{
			in:   "s3://s3.amazonaws.com",
			want: s3.Config{Endpoint: "s3.amazonaws.com", Region: "us-east-1", Secure: true},
		},
		{
			in:   "s3://host:443/?region=eu-west-1",
			want: s3.Config{Endpoint: "host:443", Region: "eu-west-1", Secure: true},
		},
		{
			in:   "s3://host?secure=1&bucket_prefix=prod.cb-",
			want: s3.Config{Endpoint: "host", Region: "us-east-1", Secure: true, BucketPrefix: "prod.cb-"},
		},
		{
			in:   "s3://host?secure=TRUE",
			want: s3.Config{Endpoint: "host", Region: "us-east-1", Secure: true},
		},
		{
			in:   "s3://host?secure=0",
			want: s3.Config{Endpoint: "host", Region: "us-east-1", Secure: false},
		},
		{
			name: "percent-decoded user info",
			in:   "s3://AK%2FID:se%2Fcr%3Aet%40%2B@127.0.0.1:7070?secure=false",
			want: s3.Config{Endpoint: "127.0.0.1:7070", Region: "us-east-1", AccessKey: "AK/ID", SecretKey: "se/cr:et@+"},
		},
		{
			in:   "s3://k:s@[::1]:9000?secure=false",
			want: s3.Config{Endpoint: "[::1]:9000", Region: "us-east-1", AccessKey: "k", SecretKey: "s"},
		},
		{
			in:   "S3://HOST:9000",
			want: s3.Config{Endpoint: "HOST:9000", Region: "us-east-1", Secure: true},
		},
	}
	for _, tt := range tests {
		name := tt.name
		if name == "" {
			name = tt.in
		}
		t.Run(name, func(t *testing.T) {
			got, err := s3.ParseConnectionString(tt.in)
			if err != nil {
				t.Fatalf("ParseConnectionString: %v", err)
			}
			if got != tt.want {
				t.Fatalf("ParseConnectionString =\n%#v, want\n%#v", got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			again, err := s3.ParseConnectionString(got.ConnectionString())
			if err != nil || again != got {
				t.Fatalf("round trip through %q = %#v, %v", got.ConnectionString(), again, err)
			}
		})
	}
}

func TestParseConnectionString_Rejects(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty", "", "scheme"},
		{"file scheme", "file:///data/blobs", `scheme "file", want s3`},
		{"http scheme", "http://host:9000", `scheme "http", want s3`},
		{"no scheme", "host:9000", "scheme"},
		{"opaque", "s3:host:9000", "want s3://host"},
		{"missing host", "s3://", "missing host"},
		{"missing host with keys", "s3://k:s@/?region=x", "missing host"},
		{"missing host with port", "s3://:9000", "missing host"},
		{"empty port", "s3://host:", "empty port"},
		{"bad port", "s3://host:99999", "invalid port"},
		{"port zero", "s3://host:0", "invalid port"},
		{"path", "s3://host/bucket", "unexpected path"},
		{"fragment", "s3://host#x", "fragment"},
		{"bad bool", "s3://host?secure=maybe", `secure="maybe" is not a boolean`},
		{"empty bool", "s3://host?secure=", "is not a boolean"},
		{"unknown param", "s3://host?bucket=x", `unknown query parameter "bucket"`},
		{"misspelt param", "s3://host?Region=x", `unknown query parameter "Region"`},
		{"repeated param", "s3://host?region=a&region=b", `"region" given 2 times`},
		{"bad region", "s3://host?region=us%20east", "region"},
		{"empty region", "s3://host?region=", "region is empty"},
		{"access key only", "s3://key@host", "without a secret key"},
		{"empty secret", "s3://key:@host", "without a secret key"},
		{"secret only", "s3://:secret@host", "without an access key"},
		{"upper-case prefix", "s3://host?bucket_prefix=CB-", "bucket_prefix"},
		{"prefix with underscore", "s3://host?bucket_prefix=cb_", "bucket_prefix"},
		{"prefix too long", "s3://host?bucket_prefix=" + strings.Repeat("a", 60), "bucket_prefix"},
		{"prefix starting with a dash", "s3://host?bucket_prefix=-cb", "bucket_prefix"},
		{"prefix ending in two dots", "s3://host?bucket_prefix=cb..", "bucket_prefix"},
		{"prefix ending in a dot and a dash", "s3://host?bucket_prefix=cb.-", "bucket_prefix"},
		{"bad escape", "s3://k:s%zz@host", "invalid URL"},
		{"space in host", "s3://ho%20st", "invalid"},
		{"ipv4 in brackets", "s3://[1.2.3.4]:9000", "invalid"},
		{"bad query escape", "s3://host?region=%zz", "invalid query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := s3.ParseConnectionString(tt.in)
			if err == nil {
				t.Fatalf("ParseConnectionString(%q) = %#v, want an error", tt.in, cfg)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "parse s3 connection string: ") {
				t.Errorf("error %q lacks its context", err)
			}
		})
	}
}

func TestParseConnectionString_KeepsTheSecretOutOfErrors(t *testing.T) {
	const secret = "TOPSECRETvalue"
	for _, in := range []string{
		"s3://key:" + secret + "@host:badport",
		"s3://key:" + secret + "@host?secure=x",
		"s3://key:" + secret + "@host/path",
		"s3://key:" + secret + "@host?bucket_prefix=UP",
		"s3://key:" + secret + "%zz@host",
		"s3://key:" + secret + "@ho st",
		"http://key:" + secret + "@host",
	} {
		_, err := s3.ParseConnectionString(in)
		if err == nil {
			t.Fatalf("ParseConnectionString(%q): no error", in)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q shows the secret", err)
		}
	}
}

func TestConfig_StringRedactsTheSecret(t *testing.T) {
	cfg := s3.Config{Endpoint: "h:1", AccessKey: "AK", SecretKey: "TOPSECRET", BucketPrefix: "cb-"}
	if s := cfg.String(); strings.Contains(s, "TOPSECRET") || !strings.Contains(s, "AK") {
		t.Fatalf("String() = %q", s)
	}
	if s := cfg.ConnectionString(); !strings.Contains(s, "TOPSECRET") {
		t.Fatalf("ConnectionString() = %q, want the secret", s)
	}
}

func TestConfig_ValidateReportsEveryProblem(t *testing.T) {
	err := s3.Config{AccessKey: "a", BucketPrefix: "UP", PartSize: 1}.Validate()
	if err == nil {
		t.Fatal("Validate: no error")
	}
	for _, want := range []string{"missing host", "access key and secret key", "bucket_prefix", "part size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, missing %q", err, want)
		}
	}
}

func FuzzParseConnectionString(f *testing.F) {
	for _, s := range []string{
		"s3://AKIA:secret@minio:9000?region=us-east-1&secure=false&bucket_prefix=cb-",
		"s3://host",
		"s3://k:s@[::1]:9000?secure=false",
		"s3://AK%2FID:se%2Fcr%3Aet@127.0.0.1:7070",
		"s3://host?secure=maybe",
		"s3://host:0",
		"file:///x",
		"s3://[fe80::1%25en0]:9000",
		"s3://a:b@h?region=&bucket_prefix=x.y-",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := s3.ParseConnectionString(s)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseConnectionString(%q) = %#v, which does not validate: %v", s, cfg, err)
		}
		again, err := s3.ParseConnectionString(cfg.ConnectionString())
		if err != nil {
			t.Fatalf("ConnectionString() %q of %q does not parse: %v", cfg.ConnectionString(), s, err)
		}
		if again != cfg {
			t.Fatalf("round trip of %q: %#v, want %#v", s, again, cfg)
		}
	})
}
