package pebble

import (
	"io"
	"os"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Files of the data directory are private to the process's user: the
// directory is created 0700 and every file 0600, whatever the umask.
// Pebble's default file system creates files 0666 and directories with the
// mode it is given (vfs.Default), so privateFS wraps it and narrows each
// file right after Pebble creates it; the directory being 0700 already
// keeps others out between the two steps.
const (
	privateDirMode  os.FileMode = 0o700
	privateFileMode os.FileMode = 0o600
)

// privateFS is a vfs.FS whose new files are 0600 and new directories 0700.
type privateFS struct{ vfs.FS }

// Unwrap implements vfs.FS.
func (fs privateFS) Unwrap() vfs.FS { return fs.FS }

// Create implements vfs.FS.
func (fs privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return narrow(name, f, err)
}

// OpenReadWrite implements vfs.FS (it may create the file).
func (fs privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return narrow(name, f, err)
}

// ReuseForWrite implements vfs.FS (a recycled WAL may have an older mode).
func (fs privateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return narrow(newname, f, err)
}

// MkdirAll implements vfs.FS: new directories are 0700, whatever perm.
func (fs privateFS) MkdirAll(dir string, _ os.FileMode) error {
	return fs.FS.MkdirAll(dir, privateDirMode)
}

// Lock implements vfs.FS: the lock file too is 0600.
func (fs privateFS) Lock(name string) (io.Closer, error) {
	c, err := fs.FS.Lock(name)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(name, privateFileMode); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// narrow sets the file name, just opened by Pebble as f, to 0600.
func narrow(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if fd := f.Fd(); fd != vfs.InvalidFd {
		err = syscall.Fchmod(int(fd), uint32(privateFileMode))
	} else {
		err = os.Chmod(name, privateFileMode)
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "chmod", Path: name, Err: err}
	}
	return f, nil
}
