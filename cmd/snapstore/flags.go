package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"unicode"
)

// The environment variables that give flags their defaults. They name no
// configuration key; serve does not warn about them.
const (
	envConfig = "SNAPSTORE_CONFIG" // --config
	envServer = "SNAPSTORE_SERVER" // --server
	envToken  = "SNAPSTORE_TOKEN"  // --token
)

// flagEnv lists the variables above.
var flagEnv = []string{envConfig, envServer, envToken}

// commonFlags are the flags every command takes.
type commonFlags struct {
	config   string
	data     string
	listen   string
	logLevel string
	server   string
	token    string
}

// newFlagSet returns the flag set of command name with the common flags;
// client adds --server and --token, the flags of the client commands.
func newFlagSet(name string, stderr io.Writer, client bool) (*flag.FlagSet, *commonFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := &commonFlags{}
	fs.StringVar(&cf.config, "config", os.Getenv(envConfig), "YAML config file")
	fs.StringVar(&cf.data, "data", "", "data directory (overrides the config)")
	fs.StringVar(&cf.listen, "listen", "", "HTTP listen address host:port (overrides the config)")
	fs.StringVar(&cf.logLevel, "log-level", "", "debug, info, warn or error (overrides the config)")
	if client {
		fs.StringVar(&cf.server, "server", os.Getenv(envServer), "server URL, e.g. http://127.0.0.1:8080")
		fs.StringVar(&cf.token, "token", os.Getenv(envToken), "bearer token for the server")
	}
	return fs, cf
}

// parseArgs parses flags placed before or after positional arguments. An
// argument spelt like a flag (-name, --name, --name=value) that names no
// flag of fs is a usage error naming it; anything else starting with "-"
// is positional, so a negative key ("get ds -5") or SQL starting with a
// "-- " comment stays an argument; "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos, flagArgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		name, hasValue := flagName(a)
		f := fs.Lookup(name)
		if name == "h" || name == "help" {
			flagArgs = append(flagArgs, a)
			continue
		}
		if f == nil {
			if looksLikeFlag(name) {
				return nil, usageError("unknown flag %s (flags: %s; put -- before an argument that starts with -)", a, flagList(fs))
			}
			pos = append(pos, a)
			continue
		}
		flagArgs = append(flagArgs, a)
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); hasValue || (ok && bf.IsBoolFlag()) {
			continue
		}
		if i+1 < len(args) {
			i++
			flagArgs = append(flagArgs, args[i])
		}
	}
	if err := fs.Parse(flagArgs); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &exitError{code: 2, err: err}
	}
	return pos, nil
}

// looksLikeFlag reports whether name (from flagName) is spelt like a
// flag: a letter, then letters, digits and '-'. "-5" and "-- comment" are
// arguments.
func looksLikeFlag(name string) bool {
	if name == "" || !unicode.IsLetter(rune(name[0])) {
		return false
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

// flagList names fs's flags as "--a, --b".
func flagList(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return strings.Join(names, ", ")
}

// flagName returns the flag name of "-name", "--name" or "--name=value",
// and whether the value is attached; "" for anything else.
func flagName(a string) (string, bool) {
	if len(a) < 2 || a[0] != '-' {
		return "", false
	}
	n := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if n == "" || n[0] == '-' || n[0] == '=' {
		return "", false
	}
	name, _, hasValue := strings.Cut(n, "=")
	return name, hasValue
}

// splitList splits a comma-separated value (--columns, a list from the
// environment) into its non-empty items, spaces trimmed; nil when there are
// none.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
