package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// atFlags are the version selector flags of the read commands (get, scan,
// datasets show): at most one of them.
type atFlags struct {
	version versionFlag
	asOf    asOfTime
	tag     string
}

// versionFlag is the value of a --version flag: a version number in
// canonical decimal, at least 1 (snapshot.ParseVersionNumber); 0 when not
// given. flag.Int64 would take "+1", "0x1" and "010" (version 8), and
// "--version 0" would read the current version.
type versionFlag int64

func (v *versionFlag) String() string {
	if v == nil || *v == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*v), 10)
}

func (v *versionFlag) Set(s string) error {
	n, err := parseVersionArg(s)
	if err != nil {
		return err
	}
	*v = versionFlag(n)
	return nil
}

// parseVersionArg reads a version number given on the command line, with
// the server's rule: canonical decimal digits, at least 1.
func parseVersionArg(s string) (int64, error) {
	n, err := snapshot.ParseVersionNumber(s)
	if err != nil {
		return 0, fmt.Errorf("want a version number, decimal digits from 1 without a sign or a leading zero, got %q", s)
	}
	return n, nil
}

// checkVersionOrTag refuses, as a usage error naming what, a value where
// a version or a tag may be given that is made of digits and signs (so
// not a tag: snapshot.ValidTagName) but is no canonical version number.
func checkVersionOrTag(what, s string) error {
	if s == "" || strings.Trim(s, "+-0123456789") != "" {
		return nil
	}
	if _, err := parseVersionArg(s); err != nil {
		return usageError("%s: %v or a tag name", what, err)
	}
	return nil
}

// asOfTime is the value of --as-of, as the API's as_of: an RFC 3339
// time as given, or a time to the second as the CLI prints it
// (2026-12-06 07:02:04+01:00, timeLayout) or without its offset, in the
// local zone (2026-12-06 07:02:04), which stands for the end of that
// second, so that a commit time pasted from versions selects the version
// committed then.
type asOfTime string

func (a *asOfTime) String() string { return string(*a) }

func (a *asOfTime) Set(s string) error {
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		*a = asOfTime(s)
		return nil
	}
	for _, layout := range []string{timeLayout, time.DateTime, "2006-01-02T15:04:05"} {
		// In a layout with an offset, the offset given decides.
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			*a = asOfTime(t.Add(time.Second - time.Nanosecond).UTC().Format(time.RFC3339Nano))
			return nil
		}
	}
	return fmt.Errorf("want an RFC 3339 time (2026-12-06T07:02:04Z) or a time as versions prints it (%s)", time.Now().Format(timeLayout))
}

func (a *atFlags) register(c *cmdLine) {
	c.fs.Var(&a.version, "version", "read this `version`")
	c.fs.Var(&a.asOf, "as-of", "read the version current at this `time`: RFC 3339, or a time as versions prints it (the end of that second)")
	c.fs.StringVar(&a.tag, "tag", "", "read the version with this `tag`")
}

// query sets the selector's query parameters of the HTTP API.
func (a *atFlags) query(q url.Values) {
	if a.version != 0 {
		q.Set("version", a.version.String())
	}
	if a.asOf != "" {
		q.Set("as_of", string(a.asOf))
	}
	if a.tag != "" {
		q.Set("tag", a.tag)
	}
}

const getHelp = `One row of a dataset at one version (the current one unless --version,
--as-of or --tag), as the JSON object of GET /v1/datasets/{dataset}/rows/{key}
on one line; --table NAME reads a table of a dataset of several tables
(GET /v1/datasets/{dataset}/tables/{table}/rows/{key}). A composite key is one argument per key column, in key order;
put -- before a key that starts with "-". A row that is not there is exit
code 1 (row_not_found).`

// cmdGet is `snapstore get DATASET KEY...`.
func cmdGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("get", "DATASET KEY... [--table NAME] [--version N|--as-of TIME|--tag TAG] [--columns A,B]", getHelp, flagsClient, stdout)
	c.rawOutput("the API's JSON")
	var at atFlags
	at.register(c)
	var table tableFlag
	table.register(c)
	columns := c.fs.String("columns", "", "comma-separated `columns` to return (default all)")
	c.emptyFrom = 1 // a key's value may be the empty string
	pos, err := c.parseN(args, 2, -1)
	if err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		q := url.Values{}
		at.query(q)
		if *columns != "" {
			q.Set("columns", *columns)
		}
		path := table.path(pos[0], "/rows")
		for _, k := range pos[1:] {
			path += "/" + url.PathEscape(k)
		}
		err := t.api.copyGet(ctx, stdout, path, q, "application/json") // the body ends with a newline
		var ae *apiError
		if errors.As(err, &ae) && ae.Problem.Code == "bad_key" && strings.Contains(ae.Problem.Detail, "key parts for") {
			// The API counts the parts of the key it was given; the
			// command's user gave arguments: "100,2" is one part.
			ae.Hint = "a composite key is one argument per key column, in key order (snapstore get " + pos[0] + " A B)"
		}
		return err
	})
}
