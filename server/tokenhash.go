package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// Tokens are kept as their hash, "sha256:" and the 64 hex digits of the
// SHA-256 of the token's text: in the config file (auth.tokens[].token_hash)
// and for tokens created through the API. A fast hash is the right one
// here, as for GitHub's and Vault's tokens: a token is a random secret of
// 256 bits (NewTokenText), not a password a person chose, so there is
// nothing for a slow hash (bcrypt, Argon2) to protect against guessing,
// while every request would pay for it. Tokens people chose are refused
// when shorter than MinTokenLength.

// TokenHashPrefix starts every token hash and names its algorithm.
const TokenHashPrefix = "sha256:"

// MinTokenLength is the fewest characters of a token the config file may
// give as itself.
const MinTokenLength = 16

// HashToken returns the hash of a token's text.
func HashToken(text string) string {
	d := sha256.Sum256([]byte(text))
	return TokenHashPrefix + hex.EncodeToString(d[:])
}

// ParseTokenHash returns the digest of a hash that HashToken wrote; the
// error says what is wrong with its form.
func ParseTokenHash(h string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	rest, ok := strings.CutPrefix(h, TokenHashPrefix)
	if !ok {
		return d, fmt.Errorf("want %s followed by 64 hex digits (snapstore token hash)", TokenHashPrefix)
	}
	b, err := hex.DecodeString(strings.ToLower(rest))
	if err != nil || len(b) != sha256.Size {
		return d, fmt.Errorf("want %s followed by 64 hex digits (snapstore token hash)", TokenHashPrefix)
	}
	copy(d[:], b)
	return d, nil
}

// NewTokenText returns a new random token: 32 bytes from crypto/rand,
// base64url without padding (43 characters).
func NewTokenText() string {
	b := make([]byte, 32)
	rand.Read(b) // never returns an error (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}
