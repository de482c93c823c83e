package main

import (
	"strings"
	"testing"
	"time"
)

// TestAsOfTime: --as-of takes an RFC 3339 time as given, and a local time
// to the second, as the CLI prints commit times, as the end of that
// second.
func TestAsOfTime(t *testing.T) {
	var a asOfTime
	if err := a.Set("2026-12-06T07:02:04.5+01:00"); err != nil || a != "2026-12-06T07:02:04.5+01:00" {
		t.Fatalf("RFC 3339: %q %v", a, err)
	}
	committed := time.Date(2026, 12, 6, 7, 2, 4, 700_000_000, time.Local)
	if err := a.Set(committed.Format(time.DateTime)); err != nil {
		t.Fatal(err)
	}
	got, err := time.Parse(time.RFC3339Nano, string(a))
	if err != nil {
		t.Fatalf("sent %q: %v", a, err)
	}
	if got.Before(committed) || !got.Before(committed.Truncate(time.Second).Add(time.Second)) {
		t.Fatalf("local %s sent as %s: not within the second, at or after the commit", committed.Format(time.DateTime), got)
	}
	// As the CLI prints it, with its offset, in whatever zone: the offset
	// decides.
	berlin := time.FixedZone("CET", 3600)
	for _, printed := range []string{timeText(&committed), committed.In(berlin).Format(timeLayout), committed.UTC().Format(timeLayout)} {
		if err := a.Set(printed); err != nil {
			t.Fatalf("%q: %v", printed, err)
		}
		got, err := time.Parse(time.RFC3339Nano, string(a))
		if err != nil || got.Before(committed) || !got.Before(committed.Truncate(time.Second).Add(time.Second)) {
			t.Fatalf("%q sent as %s (%v): not within the second, at or after the commit", printed, a, err)
		}
	}
	for _, bad := range []string{"yesterday", "2026-12-06", "07:02:04"} {
		if err := a.Set(bad); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestCLI_EmptyNameRefused: an empty argument that names something is a
// usage error, before any request (it made a path of another route, PUT
// /v1/datasets/products/tags/, answered 404 route_not_found); a key's
// value may be empty, and is asked of the server.
func TestCLI_EmptyNameRefused(t *testing.T) {
	url, _, _ := startServe(t, 0, nil)
	for _, args := range [][]string{
		{"tag", "products", ""},
		{"untag", "products", ""},
		{"get", "", "1"},
		{"adapters", "show", ""},
		{"datasets", "drop", "", "--yes"},
		{"gc", "products", ""},
	} {
		code, _, errs := cli(t, append(args, "--server", url)...)
		if code != exitUsage || !strings.Contains(errs, "is empty; usage: snapstore") || strings.Contains(errs, "route_not_found") {
			t.Errorf("%q: exit %d %s", args, code, errs)
		}
	}
	code, _, errs := cli(t, "get", "products", "", "--server", url)
	if code != 1 || !strings.Contains(errs, "HTTP 404 no_version") {
		t.Errorf("get with an empty key: exit %d %s", code, errs)
	}
}

// TestCLI_VersionOnlyCanonical: a version number on the command line
// (--version of get, scan, tables and tag, the VERSION of rollback, a
// digits-only --from or --to of diff) is canonical decimal, at least 1:
// "+1", "01", "010" (which flag.Int64 read as octal 8), "0x1", "1e3" and
// "0" (which read the current version) are a usage error saying the form,
// before any request.
func TestCLI_VersionOnlyCanonical(t *testing.T) {
	const nowhere = "http://127.0.0.1:1" // refused: a request would be exit 1
	for _, v := range []string{"+1", "01", "010", "0x1", "1e3", "0", "-1", "1_0", " 1"} {
		for _, args := range [][]string{
			{"get", "products", "1", "--version", v},
			{"scan", "products", "--version", v},
			{"tables", "products", "--version", v},
			{"tag", "products", "t", "--version", v},
		} {
			code, _, errs := cli(t, append(args, "--server", nowhere)...)
			if code != exitUsage || !strings.Contains(errs, `want a version number, decimal digits from 1 without a sign or a leading zero, got "`+v+`"`) {
				t.Errorf("%q: exit %d %s", args, code, errs)
			}
		}
	}
	for _, v := range []string{"+1", "01", "0", "-1"} {
		for _, args := range [][]string{
			{"rollback", "products", v, "--yes"},
			{"diff", "products", "--from", v},
			{"diff", "products", "--to", v},
		} {
			code, _, errs := cli(t, append(args, "--server", nowhere)...)
			if code != exitUsage || !strings.Contains(errs, `got "`+v+`" or a tag name`) {
				t.Errorf("%q: exit %d %s", args, code, errs)
			}
		}
	}
}
