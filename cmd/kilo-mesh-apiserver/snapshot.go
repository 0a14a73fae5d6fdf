package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc/grpclog"

	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/apiserver"
	"github.com/kilo-mesh/kilo-mesh-apiserver/pkg/etcd"
)

// storeFlags name the store as the server's own flags do, with the same
// names and defaults, so that a command copied from the server's args
// reaches the same data.
type storeFlags struct {
	store  etcd.Store
	prefix string
}

func (f *storeFlags) add(fs *pflag.FlagSet) {
	defaults := apiserver.NewOptions()
	f.store.DataDir = defaults.DataDir
	f.prefix = defaults.RecommendedOptions.Etcd.StorageConfig.Prefix
	fs.StringVar(&f.store.DataDir, "data-dir", f.store.DataDir, "The embedded etcd's data directory, as the server's --data-dir. Ignored with --etcd-servers.")
	fs.StringSliceVar(&f.store.Servers, "etcd-servers", nil, "The external etcd's servers, as the server's --etcd-servers; empty: the embedded etcd.")
	fs.StringVar(&f.store.CAFile, "etcd-cafile", "", "CA of the external etcd's serving certificates, as the server's flag.")
	fs.StringVar(&f.store.CertFile, "etcd-certfile", "", "Client certificate for the external etcd, as the server's flag.")
	fs.StringVar(&f.store.KeyFile, "etcd-keyfile", "", "Key of the client certificate, as the server's flag.")
	fs.StringVar(&f.prefix, "etcd-prefix", f.prefix, "The prefix of the server's keys in etcd, as the server's --etcd-prefix.")
}

// keyPrefix is the prefix with the separator the API server puts after it,
// so that /registry/x does not take /registry/xy's keys.
func keyPrefix(p string) string { return strings.TrimSuffix(p, "/") + "/" }

func newSnapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Back up the server's store and restore it into a fresh install (docs/production.md)",
		Args:  cobra.NoArgs,
		PersistentPreRun: func(*cobra.Command, []string) {
			// The etcd client's connection chatter is no news to an operator;
			// its errors reach the command's own.
			grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
		},
	}
	cmd.AddCommand(newSaveCommand(), newRestoreCommand())
	return cmd
}

func newSaveCommand() *cobra.Command {
	var f storeFlags
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Write a consistent snapshot of the store, while servers use it, to FILE (- for stdout)",
		Long: "Writes a snapshot of the store as etcd takes it: consistent, while servers serve and write. The embedded etcd is reached " +
			"through the socket of the server running on --data-dir (run it in the server's pod, e.g. with kubectl exec); an external " +
			"etcd with the server's --etcd-* flags. The file is what `etcdctl snapshot save` writes.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			client, err := f.store.Connect(ctx)
			if err != nil {
				return err
			}
			defer client.Close()
			out, done, err := output(c, args[0])
			if err != nil {
				return err
			}
			n, err := etcd.Save(ctx, client, out)
			if err = done(err); err != nil {
				return err
			}
			fmt.Fprintf(c.ErrOrStderr(), "Saved a snapshot of %d bytes to %s\n", n, args[0])
			return nil
		},
	}
	f.add(cmd.Flags())
	return cmd
}

// output is the file to write to (stdout for -) and the function that
// closes it, removing a file left incomplete by err.
func output(c *cobra.Command, path string) (io.Writer, func(error) error, error) {
	if path == "-" {
		return c.OutOrStdout(), func(err error) error { return err }, nil
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the snapshot file: %w", err)
	}
	return file, func(err error) error {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
		return err
	}, nil
}

func newRestoreCommand() *cobra.Command {
	var f storeFlags
	var from string
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Write the meshes and grants of a snapshot (FILE, - for stdin) into a fresh store no server runs on",
		Long: "Writes every key a snapshot holds under --snapshot-prefix into the store named by the flags, under --etcd-prefix, keeping " +
			"each object as it was (UIDs, finalizers, status). The store must be fresh: what it holds already must be the snapshot's, " +
			"or nothing is written. No server may run on the store meanwhile, so that every server starts from the whole restored " +
			"store: the embedded etcd is opened here (a server running on --data-dir is refused); for an external etcd, scale " +
			"the servers to 0 first.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if from == "" {
				from = f.prefix
			}
			contents, err := readSnapshot(c, args[0], keyPrefix(from))
			if err != nil {
				return err
			}
			if len(contents.KVs) == 0 {
				return fmt.Errorf("the snapshot holds nothing under %s: give the prefix it was taken with (--snapshot-prefix)", from)
			}
			res, err := restore(ctx, f.store, contents, keyPrefix(from), keyPrefix(f.prefix))
			if err != nil {
				return err
			}
			var counts []string
			for r, n := range res.ByResource {
				counts = append(counts, fmt.Sprintf("%d %s", n, r))
			}
			slices.Sort(counts)
			fmt.Fprintf(c.OutOrStdout(), "Restored %s from a snapshot at revision %d (%d written, %d already there)\n",
				strings.Join(counts, ", "), contents.Revision, res.Written, res.Present)
			return nil
		},
	}
	f.add(cmd.Flags())
	cmd.Flags().StringVar(&from, "snapshot-prefix", "", "The --etcd-prefix of the server the snapshot was taken from; empty: --etcd-prefix.")
	return cmd
}

func readSnapshot(c *cobra.Command, path, prefix string) (*etcd.Contents, error) {
	in := c.InOrStdin()
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("opening the snapshot: %w", err)
		}
		defer f.Close()
		in = f
	}
	return etcd.ReadSnapshot(in, prefix, os.TempDir())
}

// restore opens the store for the restore: the embedded member itself,
// holding its data directory, or the external etcd.
func restore(ctx context.Context, store etcd.Store, contents *etcd.Contents, from, to string) (*etcd.RestoreResult, error) {
	if store.Embedded() {
		if err := os.MkdirAll(filepath.Dir(filepath.Clean(store.DataDir)), 0o700); err != nil {
			return nil, err
		}
		member, err := etcd.StartOffline(ctx, store.DataDir)
		if err != nil {
			return nil, err
		}
		defer member.Close()
	}
	client, err := store.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	return etcd.Restore(ctx, client, contents.KVs, from, to)
}
