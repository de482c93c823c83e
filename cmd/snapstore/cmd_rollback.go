package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

const rollbackHelp = `Commit a new version of a dataset with the content of an older kept
version, written as what differs from the current version, like git
revert: reads without a version then see it, the next run compares the
source with it, and the later versions stay listed and readable until
retention expires them. It asks first on a terminal, saying what will
happen; --yes answers for scripts (without a terminal and without --yes
nothing changes: exit code 2).`

// cmdRollback is `snapstore rollback DATASET VERSION`.
func cmdRollback(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("rollback", "DATASET VERSION [--yes]", rollbackHelp, flagsClient, stdout)
	yes := c.fs.Bool("yes", false, "roll back without asking")
	pos, err := c.parseN(args, 2, 2)
	if err != nil {
		return err
	}
	ds := pos[0]
	to, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil || to < 1 {
		return usageError("VERSION: want a positive version number, got %q", pos[1])
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		raw, _, err := listVersions(ctx, t.api, ds, 0, true)
		if err != nil {
			return err
		}
		question, err := rollbackEffect(ds, to, raw)
		if err != nil {
			return err
		}
		ok, err := confirm(stderr, question, *yes)
		if err != nil {
			return err
		}
		if !ok {
			return &exitError{code: exitFailed, err: fmt.Errorf("not rolled back")}
		}
		var v snapshot.VersionInfo
		out, err := t.api.send(ctx, http.MethodPost, pathOf("/v1/datasets/", ds, "/rollback"), nil, map[string]int64{"version": to}, &v)
		if err != nil || c.cf.json() {
			return orJSON(stdout, out, err)
		}
		_, err = fmt.Fprintf(stdout, "%s: version %d is current, restored from version %d (%s rows)\n", ds, v.Version, v.RestoredFrom, count(v.Stats.Rows))
		return err
	})
}

// rollbackEffect says what rolling ds back to version to does, from its
// kept versions (newest first): the question the user answers. The
// server's rule (snapshot.DB.Rollback, snapshot.D11): a new version with
// the target's content becomes current; the later versions stay.
func rollbackEffect(ds string, to int64, versions []json.RawMessage) (string, error) {
	var target *snapshot.VersionInfo
	var cur int64
	var later []string
	for _, raw := range versions {
		var v snapshot.VersionInfo
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", fmt.Errorf("decoding a version: %w", err)
		}
		if v.Current {
			cur = v.Version
		}
		switch {
		case v.Version == to:
			target = &v
		case v.Version > to:
			later = append(later, strconv.FormatInt(v.Version, 10))
		}
	}
	if target == nil {
		return "", &exitError{code: exitFailed, err: fmt.Errorf("%s has no kept version %d (snapstore versions %s lists them)", ds, to, ds)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Roll %s back to version %d (committed %s, %s rows)? A new version with its content becomes current; the current version is %d.",
		ds, to, timeText(&target.CommittedAt), count(target.Stats.Rows), cur)
	if len(later) > 0 {
		if len(later) == 1 {
			fmt.Fprintf(&b, " The later version (%s) stays readable until retention expires it.", later[0])
		} else {
			fmt.Fprintf(&b, " The %d later versions (%s) stay readable until retention expires them.", len(later), strings.Join(later, ", "))
		}
	}
	return b.String(), nil
}
