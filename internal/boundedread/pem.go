package boundedread

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// MaxPEMBytes bounds a PEM file of certificates or of a private key read
// by PEMFile and KeyPair: 1 MiB, some five times a system's whole bundle
// of root CAs, far beyond a certificate chain or a key.
const MaxPEMBytes = 1 << 20

// PEMFile reads a PEM file (a certificate, a chain, a bundle of CAs, a
// private key) of at most MaxPEMBytes. A larger one (or a device such as
// /dev/zero) is an error naming the file and wrapping ErrTooLarge; an
// error opening it is os.Open's.
func PEMFile(path string) ([]byte, error) {
	b, err := File(path, MaxPEMBytes)
	if errors.Is(err, ErrTooLarge) {
		clear(b)
		return nil, fmt.Errorf("%s is %w", path, err)
	}
	return b, err
}

// KeyPair is tls.LoadX509KeyPair with each file read by PEMFile, so that
// a certificate or key path naming a huge file or a device is refused
// rather than read until the memory runs out.
func KeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := PEMFile(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := PEMFile(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	defer clear(key)
	return tls.X509KeyPair(cert, key)
}
