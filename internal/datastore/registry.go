package datastore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// UploadGitLab registers name (no error when it exists), finds version
// or creates it, and puts the file input into the version's artifacts;
// then prints the command that downloads it, as NeMo Gym does, to the
// path as the user gave it (given).
func UploadGitLab(ctx context.Context, g *GitLab, name, version, input, given string, out io.Writer) error {
	if _, err := os.Stat(input); err != nil {
		return fmt.Errorf("input_jsonl_fpath: %w", err)
	}
	if err := g.CreateRegisteredModel(ctx, name); err != nil {
		return fmt.Errorf("registering %s: %w", name, err)
	}
	mv, err := g.GetModelVersion(ctx, name, version)
	if NotFound(err) {
		mv, err = g.CreateModelVersion(ctx, name, version)
	}
	if err != nil {
		return fmt.Errorf("version %s of %s: %w", version, name, err)
	}
	uri, err := g.ArtifactURI(ctx, mv.RunID)
	if err != nil {
		return err
	}
	if err := g.UploadArtifact(ctx, uri, input); err != nil {
		return fmt.Errorf("uploading %s: %w", input, err)
	}
	fmt.Fprintf(out, `Download this artifact:
gym dataset download --storage gitlab \
    +dataset_name=%s \
    +version=%s \
    +artifact_fpath=%s \
    +output_fpath=%s

`, name, version, filepath.Base(input), given)
	return nil
}

// DownloadGitLab fetches a file of a dataset version into output.
func DownloadGitLab(ctx context.Context, g *GitLab, name, version, artifact, output string) error {
	mv, err := g.GetModelVersion(ctx, name, version)
	if err != nil {
		return err
	}
	uri, err := g.ArtifactURI(ctx, mv.RunID)
	if err != nil {
		return err
	}
	if dir := filepath.Dir(output); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return g.Download(ctx, ArtifactURL(uri, artifact), output)
}

// DeleteGitLab deletes a dataset from the registry after asking on in
// (y or yes, any case, deletes; anything else, or no answer, keeps it);
// a dataset the registry does not have is reported and left alone, as
// NeMo Gym does.
func DeleteGitLab(ctx context.Context, g *GitLab, name string, in io.Reader, out io.Writer) error {
	exists, err := g.RegisteredModelExists(ctx, name)
	if err != nil {
		return err
	}
	if !exists {
		fmt.Fprintf(out, "[Nemo-Gym] - Model '%s' not found in Gitlab\n", name)
		return nil
	}
	fmt.Fprintf(out, "[Nemo-Gym] - Found model '%s' in the registry. Are you sure you want to delete it from Gitlab? [y/N]: ", name)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		if answer == "" {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "[Nemo-Gym] - Skipped deletion of '%s'.\n", name)
		return nil
	}
	if err := g.DeleteRegisteredModel(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(out, "[Nemo-Gym] - Deleted '%s' from Gitlab.\n", name)
	return nil
}
