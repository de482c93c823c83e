package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

const secretsHelp = `The literal secrets (passwords, DSN passwords) of the data connections
made through the API are stored encrypted with the keys of
secrets.key_file (docs/security.md). rotate encrypts every stored secret
again with the first key: after a new key is put first in the file, and
to encrypt what earlier versions stored in clear.`

// secretsRotation is the answer of POST /v1/secrets/rotate.
type secretsRotation struct {
	KeyID       string `json:"key_id"`
	Secrets     int    `json:"secrets"`
	Connections int    `json:"connections"`
}

// cmdSecrets is `snapstore secrets rotate`.
func cmdSecrets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "secrets", secretsHelp, []subcommand{
		{"rotate", "", "encrypt every stored secret again with the first key (safe to repeat)", secretsRotate},
	}, args, stdout, stderr)
}

func secretsRotate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("secrets rotate", "", `Encrypt every secret stored with the API's data connections again with
the first key of secrets.key_file: those encrypted with another key and
those stored in clear. Safe to repeat. Once it reports success on one node,
the older keys may be removed from every node's key file.`, flagsClient, stdout)
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		var r secretsRotation
		raw, err := t.api.send(ctx, http.MethodPost, "/v1/secrets/rotate", nil, nil, &r)
		if err != nil {
			return err
		}
		if c.cf.json() {
			return printJSON(stdout, raw)
		}
		if r.Secrets == 0 {
			_, err = fmt.Fprintf(stdout, "nothing to encrypt again: no stored secret is in clear or under another key than %s\n", r.KeyID)
			return err
		}
		_, err = fmt.Fprintf(stdout, "%d secrets of %d connections encrypted again; every stored secret is now encrypted with key %s\n", r.Secrets, r.Connections, r.KeyID)
		return err
	})
}
