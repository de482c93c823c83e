package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=..."; else
// the module version from the build info.
var version = ""

// buildVersion is the version this binary reports: in `snapstore version`,
// serve's start log line and the server's build info.
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
		if v != "" {
			return v
		}
	}
	return "(devel)"
}

// cmdVersion prints the build version.
func cmdVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	c := newCmdLine("version", "", "Print the build version: the git revision it was built from (make build), else the module's.", flagsNone, stdout)
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "snapstore", buildVersion())
	return nil
}
