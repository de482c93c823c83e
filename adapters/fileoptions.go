package adapters

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/snapstore/snapstore/adapters/source"
)

// Options that name a file on the server, and their limits.
//
// Some options name a file the process opens (OptionDef.File): a SQLite
// database, a CA certificate, a client certificate or key. Through the
// API they would let a caller snapshot any database the process can read
// and probe which paths exist. They are held as file: secret references
// are (secretref.go):
//
//	O1. An option of the config file is the operator's: any file.
//	O2. An option of a connection defined through the API may name a file
//	    only under one of FileOptionLimits.Dirs, resolved inside that
//	    directory with os.Root, so that ".." and symbolic links cannot
//	    leave it. It is checked when the connection is saved (an
//	    *OptionError naming the option and connection_file_dirs) and again
//	    each time it is opened, when the connector is given the file's
//	    resolved path.
//	O3. With no Dirs, AnyFile decides: true lets an API option name any
//	    file, with the driver's own errors (a server without tokens, which
//	    answers loopback only: whoever calls it can read those files
//	    anyway); false refuses every API file option.
//	O4. Under Dirs, a file that cannot be used gives one error whatever
//	    the cause (missing, unreadable, not a regular file, outside the
//	    directories, not what the option wants: the connector's open
//	    refuses it), so that the answer does not tell whether a path
//	    exists or what it holds; the log has the cause.

// FileOptionLimits bound the file options (OptionDef.File) of connections
// defined through the API (O2, O3). The zero value allows none.
type FileOptionLimits struct {
	// Dirs are absolute directories under which an API file option may
	// name a file.
	Dirs []string
	// AnyFile lets an API file option name any file when Dirs is empty.
	AnyFile bool
}

// fileDirsKey is the config key of FileOptionLimits.Dirs, which errors
// name.
const fileDirsKey = "connection_file_dirs"

// validate checks the limits themselves: each directory absolute.
func (l FileOptionLimits) validate() error {
	var errs []error
	for i, d := range l.Dirs {
		if !filepath.IsAbs(d) {
			errs = append(errs, &OptionError{Key: fmt.Sprintf("%s[%d]", fileDirsKey, i), Msg: fmt.Sprintf("want an absolute directory, got %q", d)})
		}
	}
	return errors.Join(errs...)
}

// check refuses a file option value that an API definition may not give
// (O2, O3); key names the option. It looks at the path only, never at the
// file system, so its answer tells nothing about what exists.
func (l FileOptionLimits) check(key, path string) error {
	if len(l.Dirs) == 0 {
		if l.AnyFile {
			return nil
		}
		return &OptionError{Key: key, Msg: fmt.Sprintf("options that name a file on the server are not allowed through the API on this server (%s is not set and the server has tokens); list the file's directory in %s, or define the connection in the config file", fileDirsKey, fileDirsKey)}
	}
	if _, _, ok := fileUnder(l.Dirs, path); !ok || !filepath.IsAbs(path) {
		return &OptionError{Key: key, Msg: fmt.Sprintf("a file named through the API must be an absolute path under %s (%s)", strings.Join(l.Dirs, ", "), fileDirsKey)}
	}
	return nil
}

// fileOptions returns the keys of defs' file options that o gives, in
// the order of defs.
func fileOptions(defs []OptionDef, o OptionValues) []string {
	var keys []string
	for _, d := range defs {
		if d.File && o.String(d.Key) != "" {
			keys = append(keys, d.Key)
		}
	}
	return keys
}

// errFileOption is the one error of an API file option whose file cannot
// be used (O4).
func errFileOption(key, path string) error {
	return &OptionError{Key: key, Msg: fmt.Sprintf("file %s cannot be used: it must be a regular file under %s, readable by snapstore, that holds what the option wants; the server log says which failed", path, fileDirsKey)}
}

// resolveFileOptions returns a copy of the options o of an API connection
// of connector c with each file option held to the limits (O2, O3) and,
// under Dirs, checked by c when it is a FileChecker and replaced by the
// file's resolved path; prefix goes before the keys in errors. Under Dirs
// every error is errFileOption, the cause logged (O4).
func (l FileOptionLimits) resolveFileOptions(log *slog.Logger, prefix string, c Connector, o OptionValues) (OptionValues, error) {
	keys := fileOptions(c.Options(), o)
	if len(keys) == 0 || (len(l.Dirs) == 0 && l.AnyFile) {
		return o, nil
	}
	out := maps.Clone(o)
	var errs []error
	for _, k := range keys {
		p := o.String(k)
		if err := l.check(prefix+k, p); err != nil {
			errs = append(errs, err)
			continue
		}
		real, err := l.resolve(c, k, p)
		if err != nil {
			log.Warn("file option refused", "option", prefix+k, "path", p, "err", err)
			errs = append(errs, errFileOption(prefix+k, p))
			continue
		}
		out[k] = real
	}
	return out, errors.Join(errs...)
}

// resolve opens path, the value of c's file option key, under Dirs
// (openUnder) to prove that it resolves inside its directory to a regular
// file the process can read and, when c is a FileChecker, one it can use;
// it returns the path with its symbolic links resolved, which the
// connector then opens.
func (l FileOptionLimits) resolve(c Connector, key, path string) (string, error) {
	// O_NONBLOCK: opening a FIFO would wait for a writer otherwise.
	f, err := openUnder(l.Dirs, path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fc, ok := c.(source.FileChecker); ok {
		if err := fc.CheckFile(key, f); err != nil {
			return "", err
		}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	// The directories may themselves be links (/tmp on some systems):
	// the resolved file must lie under one of them, resolved too.
	dirs := make([]string, 0, len(l.Dirs))
	for _, d := range l.Dirs {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			dirs = append(dirs, r)
		}
	}
	if _, _, ok := fileUnder(dirs, real); !ok {
		return "", fmt.Errorf("resolves to %s, outside %s", real, fileDirsKey)
	}
	return real, nil
}

// fileOpenError turns an error of a connector's Open of an API
// connection into errFileOption when it is an *OptionError on one of its
// file options and Dirs hold them (O4): a CA file that holds no
// certificate, a file that is not a SQLite database. Other errors pass.
// err is scrubbed of the connection's secrets already: it is logged.
func (l FileOptionLimits) fileOpenError(log *slog.Logger, prefix string, defs []OptionDef, o OptionValues, err error) error {
	var oe *OptionError
	if len(l.Dirs) == 0 || !errors.As(err, &oe) || !slices.Contains(fileOptions(defs, o), oe.Key) {
		return err
	}
	log.Warn("file option refused", "option", prefix+oe.Key, "path", o.String(oe.Key), "err", err)
	return errFileOption(prefix+oe.Key, o.String(oe.Key))
}

// checkFileOptions refuses the file options of an API definition d that
// the limits do not allow (O2, O3); every refusal is an *OptionError,
// joined.
func (s *Service) checkFileOptions(d *connDef) error {
	var errs []error
	for _, k := range fileOptions(d.conn.Options(), d.opts) {
		if err := s.fileLimits.check("options."+k, d.opts.String(k)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
