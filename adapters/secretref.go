package adapters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/snapstore/snapstore/internal/boundedread"
)

// Secret references and their limits.
//
// A secret option may be a reference, "env:NAME" or "file:/abs/path",
// resolved only when the connection is opened (N4). Who wrote the
// reference decides what it may name:
//
//	F1. A reference of the config file is the operator's: any variable,
//	    any file the process can read.
//	F2. A reference of a connection defined through the API may name a
//	    file only under one of SecretRefLimits.FileDirs (none: no file),
//	    resolved inside that directory with os.Root so that ".." and
//	    symbolic links cannot leave it, and a variable only whose name
//	    starts with SecretRefLimits.EnvPrefix ("": no variable). It is
//	    checked when the connection is saved (an *OptionError) and again
//	    each time it is opened, so a definition stored before the limits
//	    or by another process is held to them too.
//	F3. Every file read, of either origin, stops at maxSecretFileBytes
//	    and at the connection's connect_timeout: a FIFO that nobody writes
//	    or /dev/zero fail rather than block a run or fill memory.
//	F4. A file reference that cannot be used gives one error whatever the
//	    cause (missing, unreadable, outside the directories, too large,
//	    too slow), so that the answer does not tell whether a path exists;
//	    the log has the cause.

// SecretRefLimits bound the secret references of connections defined
// through the API (F2). The zero value allows none.
type SecretRefLimits struct {
	// FileDirs are absolute directories under which an API file:
	// reference may name a file; none refuses API file: references.
	FileDirs []string
	// EnvPrefix starts the name of every variable an API env: reference
	// may name (for example "SNAPSTORE_SECRET_"); "" refuses API env:
	// references.
	EnvPrefix string
}

// maxSecretFileBytes is the most a file: reference reads (F3): 64 KiB.
const maxSecretFileBytes = 64 << 10

// validate checks the limits themselves: each directory absolute.
func (l SecretRefLimits) validate() error {
	var errs []error
	for i, d := range l.FileDirs {
		if !filepath.IsAbs(d) {
			errs = append(errs, &OptionError{Key: fmt.Sprintf("secrets.file_dirs[%d]", i), Msg: fmt.Sprintf("want an absolute directory, got %q", d)})
		}
	}
	return errors.Join(errs...)
}

// check refuses a reference that an API definition may not make (F2);
// key names the option. Literals pass.
func (l SecretRefLimits) check(key, ref string) error {
	switch {
	case strings.HasPrefix(ref, secretEnvPrefix):
		name := ref[len(secretEnvPrefix):]
		if l.EnvPrefix == "" {
			return &OptionError{Key: key, Msg: "env: references are not allowed through the API on this server (secrets.env_prefix is not set); give the secret itself, or define the connection in the config file"}
		}
		if !strings.HasPrefix(name, l.EnvPrefix) {
			return &OptionError{Key: key, Msg: fmt.Sprintf("an env: reference made through the API must name a variable starting with %s (secrets.env_prefix)", l.EnvPrefix)}
		}
	case strings.HasPrefix(ref, secretFilePrefix):
		if len(l.FileDirs) == 0 {
			return &OptionError{Key: key, Msg: "file: references are not allowed through the API on this server (secrets.file_dirs is not set); give the secret itself, or define the connection in the config file"}
		}
		if _, _, ok := l.fileDir(ref[len(secretFilePrefix):]); !ok {
			return &OptionError{Key: key, Msg: fmt.Sprintf("a file: reference made through the API must name a file under %s (secrets.file_dirs)", strings.Join(l.FileDirs, ", "))}
		}
	}
	return nil
}

// fileDir returns the allowed directory that holds path and path relative
// to it; ok is false for a path under none (fileUnder).
func (l SecretRefLimits) fileDir(path string) (dir, rel string, ok bool) {
	return fileUnder(l.FileDirs, path)
}

// fileUnder returns the directory of dirs that holds path and path
// relative to it; ok is false for a path under none. The path is cleaned
// first, so "/dir/../etc/passwd" is not under /dir. Symbolic links are
// not followed here: openUnder resolves them inside the directory.
func fileUnder(dirs []string, path string) (dir, rel string, ok bool) {
	p := filepath.Clean(path)
	for _, d := range dirs {
		d = filepath.Clean(d)
		r, err := filepath.Rel(d, p)
		if err == nil && r != "." && filepath.IsLocal(r) {
			return d, r, true
		}
	}
	return "", "", false
}

// openUnder opens path, which must lie under one of dirs, with flags,
// resolving it inside that directory with os.Root, so that neither ".."
// nor a symbolic link leaves it. The error says why, for the log only:
// callers answer with one message whatever the cause.
func openUnder(dirs []string, path string, flags int) (*os.File, error) {
	dir, rel, ok := fileUnder(dirs, path)
	if !ok {
		return nil, errors.New("not under the allowed directories")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.OpenFile(rel, flags, 0)
}

// errSecretFile is the one error of a file reference that cannot be used
// (F4).
func errSecretFile(key, path string) error {
	return &OptionError{Key: key, Msg: fmt.Sprintf("secret file %s cannot be used: it must exist, be readable by snapstore, hold at most %d KiB and be read within connect_timeout (and, for a connection defined through the API, lie under secrets.file_dirs); the server log says which failed", path, maxSecretFileBytes>>10)}
}

// readSecretFile reads the secret file of a reference at path, within
// ctx's deadline and maxSecretFileBytes (F3); limits is nil for a config
// reference, else the file must lie under one of its directories (F2).
// The error says why; the caller reports it as errSecretFile (F4).
func readSecretFile(ctx context.Context, path string, limits *SecretRefLimits) (string, error) {
	// O_NONBLOCK: opening a FIFO waits for a writer otherwise, and reads
	// of a FIFO or a device then go through the poller, which honours the
	// read deadline. Regular files ignore it.
	const flags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	var f *os.File
	var err error
	if limits == nil {
		f, err = os.OpenFile(path, flags, 0)
	} else {
		f, err = openUnder(limits.FileDirs, path, flags)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if fi.IsDir() {
		return "", errors.New("a directory")
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = f.SetReadDeadline(dl) // os.ErrNoDeadline for a regular file, which never blocks
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	b, err := boundedread.All(f, maxSecretFileBytes)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}
