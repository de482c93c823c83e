package boundedread

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFile: a file up to the bound is read whole; one byte more, or a
// device without end (/dev/zero), is ErrTooLarge saying the bound; a
// missing file is os.Open's error.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	at := filepath.Join(dir, "at")
	over := filepath.Join(dir, "over")
	os.WriteFile(at, []byte(strings.Repeat("k", 16)), 0o600)
	os.WriteFile(over, []byte(strings.Repeat("k", 17)), 0o600)
	if b, err := File(at, 16); err != nil || len(b) != 16 {
		t.Errorf("a file of the bound: %d bytes, %v", len(b), err)
	}
	for _, p := range []string{over, "/dev/zero"} {
		if _, err := File(p, 16); !errors.Is(err, ErrTooLarge) || err.Error() != "larger than 16 bytes" {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := File(filepath.Join(dir, "missing"), 16); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestPEMFile: a PEM file of more than MaxPEMBytes, or /dev/zero, is an
// error naming it and the bound; a missing one is os.Open's; KeyPair
// refuses either file so, and loads a pair within the bound as
// tls.X509KeyPair does.
func TestPEMFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.pem")
	os.WriteFile(big, []byte(strings.Repeat("-", MaxPEMBytes+1)), 0o600)
	for _, p := range []string{big, "/dev/zero"} {
		if _, err := PEMFile(p); !errors.Is(err, ErrTooLarge) || err.Error() != p+" is larger than 1048576 bytes" {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := PEMFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(cert, []byte(testCert), 0o600)
	os.WriteFile(key, []byte(testKey), 0o600)
	if _, err := KeyPair(cert, key); err != nil {
		t.Fatalf("a good pair: %v", err)
	}
	for _, c := range [][2]string{{"/dev/zero", key}, {cert, "/dev/zero"}} {
		if _, err := KeyPair(c[0], c[1]); !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "/dev/zero is larger than") {
			t.Errorf("%q: %v", c, err)
		}
	}
}

// testCert and testKey are a self-signed P-256 certificate and its key.
const testCert = `-----BEGIN CERTIFICATE-----
MIIBjjCCATOgAwIBAgIUFc7TCLdbl+js7L+Va/ESeP9VaFYwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQYm91bmRlZHJlYWQudGVzdDAgFw0yNjEyMDcwMDI2MDlaGA8y
MTI2MTExMzAwMjYwOVowGzEZMBcGA1UEAwwQYm91bmRlZHJlYWQudGVzdDBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABHd2wRaVD7RPZLdhju9OnuNKQPid5XCLbT+4
av+lPKcrv0q7JGO+IgXSFwSTUY1pw+seZwOA7QB1bKrzSFJWS6ajUzBRMB0GA1Ud
DgQWBBT59tEGQhAWrhB0b8m9F9VVArznkDAfBgNVHSMEGDAWgBT59tEGQhAWrhB0
b8m9F9VVArznkDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQDG
pdkKAaROcuX/1jvWURLXGg4cxRBrZwqhtIuUHtssPgIhAOk8HeKehNyxbcM7Xc8i
FkqbwvH9SulUE/e66AdHm5t7
-----END CERTIFICATE-----`

const testKey = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmDPf1NRQW3Hii3iC
AjW8ZY7WgHjXoOng/0NBcBFnPiihRANCAAR3dsEWlQ+0T2S3YY7vTp7jSkD4neVw
i20/uGr/pTynK79KuyRjviIF0hcEk1GNacPrHmcDgO0AdWyq80hSVkum
-----END PRIVATE KEY-----`
