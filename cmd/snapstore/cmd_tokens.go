package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/snapstore/snapstore/api"
)

// tokenView is a token as the API lists it: never the token.
type tokenView struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Source is "config" (the config file's auth.tokens) or "api".
	Source  string     `json:"source"`
	Created *time.Time `json:"created"`
	Expires *time.Time `json:"expires"`
	Expired bool       `json:"expired"`
	// Datasets is the token's grant; empty for every dataset.
	Datasets []string `json:"datasets"`
}

const tokensHelp = `Bearer tokens made through the API (admin; docs/security.md): created with
a role, an optional expiry and an optional grant of datasets, shown once, stored hashed by the server,
listed without any part of the secret, revoked at once on every node of a
cluster (within 2 s). Tokens of the config file are snapstore token's.`

// cmdTokens is `snapstore tokens create|list|revoke`.
func cmdTokens(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "tokens", tokensHelp, []subcommand{
		{"create", "NAME --role ROLE [--expires-in DURATION] [--datasets PATTERNS]", "a new token, printed this once", tokensCreate},
		{"list", "", "every token, the config file's and the API's: role, created, expires, datasets", tokensList},
		{"revoke", "NAME", "revoke a token at once", tokensRevoke},
	}, args, stdout, stderr)
}

func tokensCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("tokens create", "NAME --role ROLE [--expires-in DURATION] [--datasets PATTERNS]", "Create a bearer token with a role, with --expires-in an expiry, and with --datasets a grant: the token reaches only the datasets matching one of the patterns (docs/security.md#grants). The token is printed this once: the server keeps only its hash.", flagsClient, stdout)
	role := c.fs.String("role", "", "`role` of the token: reader, operator or admin")
	var expires api.Duration
	c.fs.Func("expires-in", "the token expires after this `duration` (e.g. 30d, 36h or 90m); 0 or none: never", func(s string) error {
		// ParseDuration's error says what a duration is.
		d, err := api.ParseDuration(s)
		expires = d
		return err
	})
	datasets := c.fs.String("datasets", "", "comma-separated glob `patterns` of the datasets the token may reach (e.g. 'sales_*,hr_public'); empty: every dataset")
	return onServer(ctx, c, args, stderr, 1, func(t *target, pos []string) error {
		if *role == "" {
			return usageError("--role: give reader, operator or admin")
		}
		if expires < 0 {
			return usageError("--expires-in must not be negative, got %s", expires)
		}
		body := map[string]any{"name": pos[0], "role": *role}
		if expires > 0 {
			body["expires_in"] = expires.String()
		}
		if *datasets != "" {
			body["datasets"] = strings.Split(*datasets, ",")
		}
		var out struct {
			tokenView
			Token string `json:"token"`
		}
		raw, err := t.api.send(ctx, http.MethodPost, "/v1/tokens", nil, body, &out)
		if c.cf.json() {
			return orJSON(stdout, raw, err)
		}
		if err != nil {
			return err
		}
		// The grant is said as the token list says it, so that a mistyped
		// pattern shows before the token is handed over.
		grant := "every dataset"
		if len(out.Datasets) > 0 {
			grant = "datasets " + strings.Join(out.Datasets, ",")
		}
		// The token alone on stdout, so that TOKEN=$(snapstore tokens
		// create ...) takes it; what it is goes to stderr.
		fmt.Fprintf(stderr, "token %s (role %s, %s, expires %s); it is shown this once:\n", out.Name, out.Role, grant, expiresText(out.tokenView))
		fmt.Fprintln(stdout, out.Token)
		if expires == 0 {
			fmt.Fprintf(stderr, "note: token %s never expires; revoke it with `snapstore tokens revoke %s`, or create tokens with --expires-in (e.g. 90d)\n", out.Name, out.Name)
		}
		return nil
	})
}

func tokensList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("tokens list", "", "The tokens of the config file and those made through the API: source, role, when created, when they expire, the datasets they may reach. Never a token.", flagsClient, stdout)
	type answer struct {
		Tokens []tokenView `json:"tokens"`
	}
	return serverCommand(ctx, c, args, stderr, "/v1/tokens", func(_ []string, body answer) error {
		tb := newTable(stdout, "TOKEN", "SOURCE", "ROLE", "CREATED", "EXPIRES", "DATASETS")
		for _, tk := range body.Tokens {
			ds := "all"
			if len(tk.Datasets) > 0 {
				ds = strings.Join(tk.Datasets, ",")
			}
			tb.row(tk.Name, tk.Source, tk.Role, timeText(tk.Created), expiresText(tk), ds)
		}
		return tb.flush()
	})
}

func tokensRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("tokens revoke", "NAME", "Revoke a token made through the API: refused at once by this server, within 2 s by every node of its cluster.", flagsClient, stdout)
	return onServer(ctx, c, args, stderr, 1, func(t *target, pos []string) error {
		if _, err := t.api.call(ctx, http.MethodDelete, pathOf("/v1/tokens/", pos[0]), nil, nil); err != nil {
			return err
		}
		if c.cf.json() {
			return encodeJSON(stdout, deletedJSON{Deleted: pos[0]})
		}
		_, err := fmt.Fprintf(stdout, "token %s revoked\n", pos[0])
		return err
	})
}

// expiresText is a token's expiry in a table: "never", or the time with
// "(expired)".
func expiresText(t tokenView) string {
	switch {
	case t.Expires == nil:
		return "never"
	case t.Expired:
		return timeText(t.Expires) + " (expired)"
	}
	return timeText(t.Expires)
}
