package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/outfile"
	"github.com/fabriclab/fabriclab/tools/wireshark"
)

func init() {
	var dir string
	var print bool
	cmd := &cobra.Command{
		Use:   "wireshark-plugin",
		Short: "install the Wireshark/tshark Lua dissector for PortFC frames, the source route option and probes",
		Long: `Write fabriclab's Lua dissector (tools/wireshark/fabriclab.lua, built into this binary) into Wireshark's
personal plugin folder, ~/.local/lib/wireshark/plugins/ (for root: /root/...), where Wireshark and tshark
load it at start. --dir picks another folder; --print writes it to stdout. Without installing:
tshark -X lua_script:tools/wireshark/fabriclab.lua -r FILE.pcap.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if print {
				_, err := cmd.OutOrStdout().Write(wireshark.Dissector)
				return err
			}
			if dir == "" {
				home, err := os.UserHomeDir()
				if err != nil {
					return fmt.Errorf("no home directory to find Wireshark's plugin folder in (use --dir): %w", err)
				}
				dir = filepath.Join(home, ".local", "lib", "wireshark", "plugins")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			path := filepath.Join(dir, wireshark.FileName)
			if err := outfile.WriteBytes(path, outfile.Replace, wireshark.Dissector); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s (tshark -G plugins lists it)\n", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "plugin folder (default ~/.local/lib/wireshark/plugins)")
	cmd.Flags().BoolVar(&print, "print", false, "write the dissector to stdout instead")
	root.AddCommand(cmd)
}
