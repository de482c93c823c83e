package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"

	"github.com/snapstore/snapstore/store/hbase"
)

const hbaseHelp = `The HBase backend's table (docs/hbase.md).`

// cmdHBase is `snapstore hbase drop-table`.
func cmdHBase(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "hbase", hbaseHelp, []subcommand{
		{"drop-table", "[--config FILE] [--yes]", "delete the HBase table of the config and everything in it (asks first)", hbaseDropTable},
	}, args, stdout, stderr)
}

const hbaseDropTableHelp = `Delete the HBase table of the configuration (storage.hbase: thrift,
namespace, table), with every dataset, version, run record and definition
in it: HBase's disableTable then deleteTable, through the Thrift2 gateway.
The namespace stays. Stop every snapstore process on the table first: one
still serving on the configured listen address is refused; others would
fail on their next call. It asks first on a terminal; --yes answers for
scripts (without a terminal and without --yes nothing is deleted: exit
code 2). A table that does not exist is not an error.`

func hbaseDropTable(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("hbase drop-table", "[--config FILE] [--yes]", hbaseDropTableHelp, flagsConfig, stdout)
	yes := c.fs.Bool("yes", false, "delete without asking")
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	cfg, err := loadConfig(c.cf, os.Environ())
	if err != nil {
		return err
	}
	if cfg.Storage.Backend != "hbase" {
		return usageError("storage.backend is %q: give the config of an HBase store (--config FILE)", cfg.Storage.Backend)
	}
	if u := serverAt(ctx, localURL(cfg), &tls.Config{}); u != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("a snapstore server answers at %s: stop every process on %s first", u, storageText(cfg))}
	}
	ok, err := confirm(stderr, fmt.Sprintf("Delete %s, with every dataset, version, run record and definition in it? This cannot be undone.", storageText(cfg)), *yes)
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{code: exitFailed, err: fmt.Errorf("not deleted")}
	}
	h := cfg.Storage.HBase
	if err := hbase.DropTable(ctx, hbase.Options{Addr: h.Thrift, Namespace: h.Namespace, Table: h.Table, DialTimeout: h.DialTimeout, CallTimeout: h.CallTimeout}); err != nil {
		return &exitError{code: exitUnreachable, err: fmt.Errorf("deleting %s: %w", storageText(cfg), err)}
	}
	_, err = fmt.Fprintf(stdout, "deleted %s\n", storageText(cfg))
	return err
}
