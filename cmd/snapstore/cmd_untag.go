package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

const untagHelp = `Remove a tag from a dataset. The version it named stays while retention
keeps it; GC may then collect it.`

// cmdUntag is `snapstore untag DATASET TAG`.
func cmdUntag(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("untag", "DATASET TAG", untagHelp, flagsClient, stdout)
	pos, err := c.parseN(args, 2, 2)
	if err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		if _, err := t.api.call(ctx, http.MethodDelete, pathOf("/v1/datasets/", pos[0], "/tags/", pos[1]), nil, nil); err != nil {
			return err
		}
		if c.cf.json() {
			return encodeJSON(stdout, deletedJSON{Dataset: pos[0], Deleted: pos[1]}) // the API answers 204, no body
		}
		_, err := fmt.Fprintf(stdout, "%s: tag %s removed\n", pos[0], pos[1])
		return err
	})
}
