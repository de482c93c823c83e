package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

const tagHelp = `Name a kept version of a dataset: the current one, or --version N. A tagged
version is kept by GC whatever the retention, and can be read with
--tag TAG (get, scan, datasets show) and diffed with --from TAG. Tagging
again moves the tag. A tag name has 1 to 200 letters, digits and _.:@-,
at least one of them a letter or one of _.:@ (digits and - alone read as
a version number), not dots alone (a URL path drops . and ..).`

// cmdTag is `snapstore tag DATASET TAG`.
func cmdTag(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("tag", "DATASET TAG [--version N]", tagHelp, flagsClient, stdout)
	var version versionFlag
	c.fs.Var(&version, "version", "tag this `version` (default the current one)")
	pos, err := c.parseN(args, 2, 2)
	if err != nil {
		return err
	}
	var body any
	if version != 0 {
		body = map[string]int64{"version": int64(version)}
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		// The version the tag names before, if any, to say that tagging
		// moved it; best effort, as the tag may move meanwhile.
		var before struct {
			VersionRead *snapshot.VersionInfo `json:"version_read"`
		}
		if _, err := t.api.get(ctx, pathOf("/v1/datasets/", pos[0]), url.Values{"tag": {pos[1]}}, &before); err != nil {
			before.VersionRead = nil
		}
		var v snapshot.VersionInfo
		raw, err := t.api.send(ctx, http.MethodPut, pathOf("/v1/datasets/", pos[0], "/tags/", pos[1]), nil, body, &v)
		if err != nil || c.cf.json() {
			return orJSON(stdout, raw, err)
		}
		moved := ""
		if b := before.VersionRead; b != nil && b.Version != v.Version {
			moved = fmt.Sprintf(" (moved from version %d)", b.Version)
		}
		_, err = fmt.Fprintf(stdout, "%s version %d (committed %s, %s rows) is tagged %s%s; its tags: %s\n",
			pos[0], v.Version, timeText(&v.CommittedAt), count(v.Stats.Rows), pos[1], moved, strings.Join(v.Tags, ", "))
		return err
	})
}
