package resolve

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
)

// Materialize gives the built-in component tree src (embedded in the binary)
// a real directory, because servers run with their component directory as cwd
// and Python servers import from it. The tree is written once to
// <cacheDir>/builtin-<content hash>: a binary whose components differ gets its
// own directory, and an existing one is reused untouched.
//
// The tree is written into a temporary directory beside the target and renamed
// into place, so no process ever sees a half-written tree; when several
// processes race, one rename wins and the others use its result. Files are
// 0644 and directories 0755, files 0755 where src reports an executable bit
// (embed.FS never does).
func Materialize(src fs.FS, cacheDir string) (string, error) {
	return MaterializeAs(src, cacheDir, "builtin")
}

// MaterializeAs is Materialize into <cacheDir>/<prefix>-<content hash>, for
// trees other than the built-in components.
func MaterializeAs(src fs.FS, cacheDir, prefix string) (string, error) {
	sum, err := treeHash(src)
	if err != nil {
		return "", fmt.Errorf("hashing the %s tree: %w", prefix, err)
	}
	dir := filepath.Join(cacheDir, prefix+"-"+sum)
	if isDir(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("creating the cache directory for the %s tree: %w", prefix, err)
	}
	tmp, err := os.MkdirTemp(cacheDir, "."+prefix+"-"+sum+"-*")
	if err != nil {
		return "", fmt.Errorf("creating a staging directory for the %s tree: %w", prefix, err)
	}
	if err := writeTree(src, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("writing the %s tree to %s: %w", prefix, tmp, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		// Renaming onto a directory another process finished first fails;
		// its tree is the same content, so use it.
		if isDir(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("installing the %s tree at %s: %w", prefix, dir, err)
	}
	return dir, nil
}

// treeHash identifies the tree by every path, kind, executable bit and file
// content, length-prefixed so that no two trees feed the same bytes.
func treeHash(src fs.FS) (string, error) {
	h := sha256.New()
	h.Write([]byte("gym builtin tree v1\x00"))
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			writeField(h, "d", []byte(p))
			return nil
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		kind := "f"
		if executable(d) {
			kind = "x"
		}
		writeField(h, kind, []byte(p))
		writeField(h, "c", data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func writeField(h hash.Hash, tag string, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write([]byte(tag))
	h.Write(n[:])
	h.Write(b)
}

func executable(d fs.DirEntry) bool {
	info, err := d.Info()
	return err == nil && info.Mode().Perm()&0o111 != 0
}

func writeTree(src fs.FS, dst string) error {
	// MkdirTemp makes the staging directory 0700; the renamed tree is shared.
	if err := os.Chmod(dst, 0o755); err != nil {
		return err
	}
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		if d.IsDir() {
			return os.Mkdir(target, 0o755)
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		perm := fs.FileMode(0o644)
		if executable(d) {
			perm = 0o755
		}
		return os.WriteFile(target, data, perm)
	})
}

// DefaultCacheDir is where Materialize keeps built-in trees:
// $XDG_CACHE_HOME/gym, else $HOME/.cache/gym, else (no usable home, as for
// system accounts and bare containers) a per-user directory under the system
// temp dir.
func DefaultCacheDir(getenv func(string) string) string {
	// The XDG spec says to ignore a relative XDG_CACHE_HOME.
	if x := getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "gym")
	}
	if home := getenv("HOME"); filepath.IsAbs(home) && isDir(home) {
		return filepath.Join(home, ".cache", "gym")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("gym-%d", os.Getuid()))
}
