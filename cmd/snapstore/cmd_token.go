package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/snapstore/snapstore/server"
)

// cmdToken is `snapstore token SUBCOMMAND`, tokens for the config file's
// auth.tokens:
//
//	snapstore token new     a new random token and its hash
//	snapstore token hash    the hash of the token read on stdin (token_hash)
func cmdToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "token", tokenHelp, []subcommand{
		{"new", "", "a new random token (32 bytes, base64url) and its hash", cmdTokenNew},
		{"hash", "", "the hash of the token read on stdin, for auth.tokens[].token_hash", cmdTokenHash},
	}, args, stdout, stderr)
}

const tokenHelp = `Bearer tokens for the config file (auth.tokens, docs/security.md). The
file may hold a token's hash (token_hash) rather than the token; the
server then never needs the token itself. Tokens made through the API
are handled by snapstore tokens.`

// cmdTokenNew prints a new token and its hash.
func cmdTokenNew(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("token new", "", "Print a new random token (32 bytes from the system's secure random source, base64url) and its hash, the value of auth.tokens[].token_hash. Give the token to its user; keep only the hash in the file.", flagsNone, stdout)
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	tok := server.NewTokenText()
	fmt.Fprintf(stdout, "token: %s\ntoken_hash: %s\n", tok, server.HashToken(tok))
	return nil
}

// cmdTokenHash reads a token on stdin and prints its hash.
func cmdTokenHash(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return tokenHash(args, os.Stdin, stdout)
}

func tokenHash(args []string, stdin io.Reader, stdout io.Writer) error {
	c := newCmdLine("token hash", "", "Read a token on stdin (its first line) and print its hash, the value of auth.tokens[].token_hash. The token is read from stdin, not from the command line, so that it stays out of the shell history and the process list.", flagsNone, stdout)
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 1<<16)).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("reading the token on stdin: %w", err)
	}
	tok := strings.TrimSpace(line)
	if tok == "" {
		return usageError("give the token on stdin, e.g. snapstore token hash < token.txt")
	}
	if len(tok) < server.MinTokenLength {
		return usageError("the token has %d characters; a token must have at least %d to be a secret (snapstore token new makes one)", len(tok), server.MinTokenLength)
	}
	fmt.Fprintln(stdout, server.HashToken(tok))
	return nil
}
