package main

import "github.com/spf13/cobra"

// newCmdDatasetCollateGroup holds `dataset collate` and `dataset render`
// until the lead merges them into the `dataset` group (dataset.go, with
// upload/download/rm/migrate).
func newCmdDatasetCollateGroup(f *Factory, g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "dataset", Short: "Manage datasets"}
	cmd.AddCommand(newCmdDatasetCollate(f, g, nil), newCmdDatasetRender(f, g, nil))
	makeGroup(cmd)
	return cmd
}
