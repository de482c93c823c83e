package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

const rollbackHelp = `Commit a new version of a dataset with the content of an older kept
version, given by its number or a tag name, written as what differs from
the current version, like git revert: reads without a version then see
it, and the later versions stay listed and readable until retention
expires them. It asks first on a terminal, saying what will happen; --yes
answers for scripts (without a terminal and without --yes nothing
changes: exit code 2).

A rollback does not stop the dataset's adapter: its next run, scheduled
or not, reads the source again and commits what the source has, which
undoes the rollback unless the source was set right too. Adapters cannot
be paused; to keep the rolled-back content, remove the adapter's schedule
(adapters create -f FILE --replace) before rolling back, or fix the source
first.`

// cmdRollback is `snapstore rollback DATASET VERSION|TAG`.
func cmdRollback(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("rollback", "DATASET VERSION|TAG [--yes]", rollbackHelp, flagsClient, stdout)
	yes := c.fs.Bool("yes", false, "roll back without asking")
	pos, err := c.parseN(args, 2, 2)
	if err != nil {
		return err
	}
	ds, ref := pos[0], pos[1]
	// A tag name is never only digits and "-" (snapshot.ValidTagName), so
	// what is made of digits and signs is a version number.
	if err := checkVersionOrTag("VERSION", ref); err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		raw, _, err := listVersions(ctx, t.api, ds, 0, true)
		if err != nil {
			return err
		}
		to, question, err := rollbackEffect(ds, ref, raw)
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
		if _, err := fmt.Fprintf(stdout, "%s: version %d is current, restored from version %d (%s rows)\n", ds, v.Version, v.RestoredFrom, count(v.Stats.Rows)); err != nil {
			return err
		}
		_, err = fmt.Fprintf(stderr, "note: the next run of the adapter that feeds %s reads the source again and undoes this rollback unless the source was set right too\n", ds)
		return err
	})
}

// rollbackEffect finds the version ref names (a version number or a tag)
// among ds's kept versions (newest first) and says what rolling back to
// it does: the question the user answers. The server's rule
// (snapshot.DB.Rollback, snapshot.D11): a new version with the target's
// content becomes current; the later versions stay.
func rollbackEffect(ds, ref string, versions []json.RawMessage) (int64, string, error) {
	vs := make([]snapshot.VersionInfo, len(versions))
	var target *snapshot.VersionInfo
	var cur int64
	for i, raw := range versions {
		v := &vs[i]
		if err := json.Unmarshal(raw, v); err != nil {
			return 0, "", fmt.Errorf("decoding a version: %w", err)
		}
		if v.Current {
			cur = v.Version
		}
		if strconv.FormatInt(v.Version, 10) == ref || slices.Contains(v.Tags, ref) {
			target = v
		}
	}
	if target == nil {
		if _, err := strconv.ParseInt(ref, 10, 64); err != nil {
			return 0, "", &exitError{code: exitFailed, err: fmt.Errorf("%s has no kept version tagged %q (snapstore versions %s lists them)", ds, ref, ds)}
		}
		return 0, "", &exitError{code: exitFailed, err: fmt.Errorf("%s has no kept version %s (snapstore versions %s lists them)", ds, ref, ds)}
	}
	to := target.Version
	var later []string
	for _, v := range vs {
		if v.Version > to {
			later = append(later, strconv.FormatInt(v.Version, 10))
		}
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
	b.WriteString(" The adapter's next run reads the source again and undoes the rollback unless the source was set right too.")
	return to, b.String(), nil
}
