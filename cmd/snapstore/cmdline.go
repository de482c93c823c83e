package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/config"
)

// The environment variables that give flags their defaults. They name no
// configuration key; serve does not warn about them.
const (
	envConfig = "SNAPSTORE_CONFIG" // --config
	envServer = "SNAPSTORE_SERVER" // --server
	envToken  = "SNAPSTORE_TOKEN"  // --token
)

// flagEnv lists the variables above.
var flagEnv = []string{envConfig, envServer, envToken, envCAFile, envClientCert, envClientKey}

// errHelpShown ends a command whose help was asked for and printed: exit 0.
var errHelpShown = errors.New("help shown")

// flagKind says which common flags a command takes.
type flagKind int

const (
	flagsNone   flagKind = iota // sqlite, version, cluster keygen
	flagsConfig                 // serve: --config, --data, --listen, --log-level
	flagsClient                 // the client commands: also --server, --token, --output
)

// commonFlags are the flags every command of a kind takes.
type commonFlags struct {
	config   string
	data     string
	listen   string
	logLevel string
	server   string
	token    string
	// caFile, clientCert and clientKey set the client's TLS (clienttls.go).
	caFile     string
	clientCert string
	clientKey  string
	output     string // table or json
	// dataSet is true when --data was given: the data directory is then
	// the target, never a server (target.go).
	dataSet bool
	// fs is the command's flag set, whose flags give the API's
	// parameters of the same names (nameFlag).
	fs *flag.FlagSet
}

// nameFlag sets the Flag of an API error whose problem names a parameter
// that one of the command's flags gives: the flag of the parameter's
// name, its underscores as hyphens (from is --from, as_of --as-of); and
// so the Flags of the violations it lists. It returns err.
func (cf *commonFlags) nameFlag(err error) error {
	var ae *apiError
	if cf.fs == nil || !errors.As(err, &ae) {
		return err
	}
	ae.Flag = cf.flagOf(ae.Problem.Field)
	if len(ae.Problem.Errors) > 1 {
		ae.Flags = make([]string, len(ae.Problem.Errors))
		for i, v := range ae.Problem.Errors {
			ae.Flags[i] = cf.flagOf(v.Field)
		}
	}
	return err
}

// flagOf returns the command's flag that gives field, "" for none.
func (cf *commonFlags) flagOf(field string) string {
	if field == "" {
		return ""
	}
	name := field
	if b, ok := strings.CutPrefix(name, "body."); ok {
		// A top-level field of a body the command built from its flags
		// (tokens create --role, --datasets): that flag, whatever the
		// index of a list's item. A nested one (body.retention.ttl of
		// a file) is no flag's.
		if name, _, _ = strings.Cut(b, "["); strings.Contains(name, ".") {
			return ""
		}
	}
	if name := strings.ReplaceAll(name, "_", "-"); cf.fs.Lookup(name) != nil {
		return "--" + name
	}
	return ""
}

// json reports whether --output json was asked for.
func (cf *commonFlags) json() bool { return cf.output == "json" }

// cmdLine is one command's command line: the flag set with the common
// flags of its kind, and its help.
type cmdLine struct {
	name     string // "diff", "runs follow"
	synopsis string // after the name: "DATASET [--from V|TAG] [--to V|TAG]"
	help     string // what it does, flags aside
	fs       *flag.FlagSet
	cf       *commonFlags
	stdout   io.Writer
	// emptyFrom is the first positional argument that may be empty (a
	// key's value); 0: none may. The others name things (a dataset, a
	// tag), and an empty one would make a path of the API without it.
	emptyFrom int
}

// newCmdLine returns the command line of command name with the common
// flags of kind; help goes to stdout.
func newCmdLine(name, synopsis, help string, kind flagKind, stdout io.Writer) *cmdLine {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors and help itself
	cf := &commonFlags{output: "table", fs: fs}
	if kind >= flagsConfig {
		fs.StringVar(&cf.config, "config", os.Getenv(envConfig), "YAML config `file` (also "+envConfig+")")
		fs.Func("data", "data `directory` (overrides the config)", func(v string) error {
			cf.data, cf.dataSet = v, true
			return nil
		})
		fs.StringVar(&cf.listen, "listen", "", "HTTP listen address `host:port` (overrides the config)")
		fs.StringVar(&cf.logLevel, "log-level", "", "`level`: debug, info, warn or error (overrides the config)")
	}
	if kind >= flagsClient {
		fs.StringVar(&cf.server, "server", os.Getenv(envServer), "ask the server at this `URL`, e.g. http://127.0.0.1:8080 (also "+envServer+")")
		fs.StringVar(&cf.token, "token", os.Getenv(envToken), "bearer `token` for the server (prefer "+envToken+")")
		fs.StringVar(&cf.caFile, "ca-file", os.Getenv(envCAFile), "PEM `file` of the CA that signed an https:// server's certificate, trusted instead of the config's tls.ca_file or tls.cert_file (also "+envCAFile+")")
		fs.StringVar(&cf.clientCert, "client-cert", os.Getenv(envClientCert), "PEM client certificate `file` for a server that asks for one (also "+envClientCert+")")
		fs.StringVar(&cf.clientKey, "client-key", os.Getenv(envClientKey), "PEM `file` of the client certificate's key (also "+envClientKey+")")
		fs.StringVar(&cf.output, "output", "table", "`format`: table or json (the API's JSON)")
		fs.Var(jsonFlag{cf}, "json", "same as --output json")
	}
	return &cmdLine{name: name, synopsis: synopsis, help: help, fs: fs, cf: cf, stdout: stdout}
}

// jsonFlag is --json: a flag without a value that sets --output json.
type jsonFlag struct{ cf *commonFlags }

func (j jsonFlag) String() string   { return "" }
func (j jsonFlag) IsBoolFlag() bool { return true }

func (j jsonFlag) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want --json alone, or --json=true or false, got %q", v)
	}
	if b {
		j.cf.output = "json"
	} else if j.cf.output == "json" {
		j.cf.output = "table"
	}
	return nil
}

// parse parses args (flags before or after the positional arguments,
// parseArgs) and returns the positional ones. --help prints the help to
// stdout and returns errHelpShown; a bad flag is a usage error.
func (c *cmdLine) parse(args []string) ([]string, error) {
	pos, err := parseArgs(c.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.printHelp()
		return nil, errHelpShown
	}
	if err != nil {
		return nil, err
	}
	if c.cf.output != "table" && c.cf.output != "json" {
		return nil, usageError("--output: want table or json, got %q", c.cf.output)
	}
	return pos, nil
}

// printHelp writes the command's help and flags to stdout.
func (c *cmdLine) printHelp() {
	fmt.Fprintf(c.stdout, "Usage: snapstore %s\n\n%s\n", strings.TrimSpace(c.name+" "+c.synopsis), strings.TrimSpace(c.help))
	var own, common []*flag.Flag
	c.fs.VisitAll(func(f *flag.Flag) {
		if commonFlagNames[f.Name] {
			common = append(common, f)
		} else {
			own = append(own, f)
		}
	})
	printFlags := func(title string, fl []*flag.Flag) {
		if len(fl) == 0 {
			return
		}
		fmt.Fprintf(c.stdout, "\n%s:\n", title)
		for _, f := range fl {
			name, use := flag.UnquoteUsage(f)
			head := "  --" + f.Name
			if name != "" && !isBoolFlag(f) {
				head += " " + strings.ToUpper(name)
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && !isSecretFlag(f.Name) {
				if g, ok := f.Value.(flag.Getter); ok && isString(g.Get()) {
					use += fmt.Sprintf(" (default %q)", f.DefValue)
				} else {
					use += fmt.Sprintf(" (default %s)", f.DefValue) // a number or a duration, unquoted
				}
			}
			fmt.Fprintf(c.stdout, "%-26s %s\n", head, use)
		}
	}
	printFlags("Flags", own)
	printFlags("Common flags (snapstore help says where a command runs)", common)
	if c.cf != nil && c.fs.Lookup("server") != nil {
		fmt.Fprintf(c.stdout, "\n%s", exitCodesHelp)
	}
}

// isString reports whether a flag's value is a string, whose default
// help quotes.
func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// rawOutput is for the commands that always print what the API sends
// (get, scan): their help says so instead of offering a table.
func (c *cmdLine) rawOutput(what string) {
	for _, name := range []string{"output", "json"} {
		f := c.fs.Lookup(name)
		f.Usage, f.DefValue = "ignored: "+c.name+" always prints "+what, ""
	}
	c.fs.Lookup("output").Usage = "`format` ignored: " + c.name + " always prints " + what
}

// commonFlagNames are the flags of newCmdLine's kinds.
var commonFlagNames = map[string]bool{"config": true, "data": true, "listen": true, "log-level": true,
	"server": true, "token": true, "output": true, "json": true, "ca-file": true, "client-cert": true, "client-key": true}

// isSecretFlag reports flags whose default must not be printed: --token
// defaults to SNAPSTORE_TOKEN.
func isSecretFlag(name string) bool { return name == "token" }

// isBoolFlag reports whether f takes no value.
func isBoolFlag(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
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
		if hasValue || isBoolFlag(f) {
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
		return nil, &exitError{code: exitUsage, err: errors.New(flagDashes.ReplaceAllString(err.Error(), "$1 --$2"))}
	}
	return pos, nil
}

// flagDashes finds the flag names in package flag's errors ("invalid
// value "1y" for flag -expires-in", "flag needs an argument: -out"), which
// it spells with one dash, to spell them as the help and docs do.
var flagDashes = regexp.MustCompile(`(for flag|for|argument:|defined:) -([A-Za-z])`)

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

// parseN is parse, then wantArgs: from min to max positional arguments
// (max -1: any number).
func (c *cmdLine) parseN(args []string, min, max int) ([]string, error) {
	pos, err := c.parse(args)
	if err != nil {
		return nil, err
	}
	return pos, c.wantArgs(pos, min, max)
}

// wantArgs checks the number of positional arguments: a usage error
// naming the synopsis otherwise.
func (c *cmdLine) wantArgs(pos []string, min, max int) error {
	if len(pos) < min || max >= 0 && len(pos) > max {
		return usageError("usage: snapstore %s %s (snapstore %s --help)", c.name, c.synopsis, c.name)
	}
	return c.wantNamed(pos)
}

// wantNamed refuses an empty positional argument before emptyFrom: a
// usage error rather than a request to another route of the API
// (PUT /v1/datasets/a/tags/ for an empty tag).
func (c *cmdLine) wantNamed(pos []string) error {
	for i, p := range pos {
		if p == "" && (c.emptyFrom == 0 || i < c.emptyFrom) {
			return usageError("argument %d is empty; usage: snapstore %s %s (snapstore %s --help)", i+1, c.name, c.synopsis, c.name)
		}
	}
	return nil
}

// subcommand is one command of a group (datasets list, runs follow).
type subcommand struct {
	name    string
	args    string
	summary string
	run     command
}

// runGroup runs the subcommand args[0] of group; none, or --help, prints
// the group's help (to stdout when asked for, else to stderr as a usage
// error).
func runGroup(ctx context.Context, group, help string, subs []subcommand, args []string, stdout, stderr io.Writer) error {
	text := func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "Usage: snapstore %s SUBCOMMAND ...\n\n%s\n\nSubcommands:\n", group, strings.TrimSpace(help))
		for _, s := range subs {
			syn := strings.TrimSpace(s.name + " " + s.args)
			if len(syn) > 30 {
				fmt.Fprintf(&b, "  %s\n  %-30s %s\n", syn, "", s.summary)
				continue
			}
			fmt.Fprintf(&b, "  %-30s %s\n", syn, s.summary)
		}
		fmt.Fprintf(&b, "\n`snapstore %s SUBCOMMAND --help` tells more.\n", group)
		return b.String()
	}
	if len(args) == 0 {
		return usageError("%s", strings.TrimSpace(text()))
	}
	if n, _ := flagName(args[0]); n == "h" || n == "help" {
		fmt.Fprint(stdout, text())
		return errHelpShown
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, args[1:], stdout, stderr)
		}
	}
	// One line naming the subcommands, as an unknown command's does: the
	// whole help inside an error buries what went wrong.
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return usageError("unknown subcommand %q (known: %s; snapstore help %s tells more)", args[0], strings.Join(names, ", "), group)
}

// loadConfig loads the configuration of cf's flags and environ
// (config.Load); a bad one is exit code 2.
func loadConfig(cf *commonFlags, environ []string) (*config.Config, error) {
	cfg, err := config.Load(cf.configFlags(), environ)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return cfg, nil
}

// configFlags are the flags of cf that the configuration takes.
func (cf *commonFlags) configFlags() config.Flags {
	return config.Flags{File: cf.config, Data: cf.data, Listen: cf.listen, LogLevel: cf.logLevel}
}

// configExit makes a problem of the configuration that opening found (a
// *config.KeyError, a definition adapters refused) exit code 2.
func configExit(err error) error {
	var ke *config.KeyError
	if errors.As(err, &ke) || errors.Is(err, adapters.ErrBadOption) {
		return &exitError{code: exitUsage, err: err}
	}
	return err
}

// decimalInt is the value of a flag that takes a count (--limit): an
// integer in canonical decimal. flag.Int reads as Go source does, so
// "010" was 8, "0x10" 16 and "0b11" 3: a count given with a leading zero
// read another number than the one written.
type decimalInt int

func (d *decimalInt) String() string { return strconv.Itoa(int(*d)) }

func (d *decimalInt) Set(s string) error {
	// Canonical: the text is the one formatting the number gives back.
	n, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(n) != s {
		return fmt.Errorf("want a number in decimal digits without a leading zero, got %q", s)
	}
	*d = decimalInt(n)
	return nil
}

// intFlag defines a flag of a count read as decimalInt does.
func (c *cmdLine) intFlag(name string, value int, usage string) *int {
	p := new(int)
	*p = value
	c.fs.Var((*decimalInt)(p), name, usage)
	return p
}
