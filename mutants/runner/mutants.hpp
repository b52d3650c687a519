// The mutation campaign and the document's BLOCK exercise, as the `normcheck` CLI runs them:
//   normcheck mutants [options]    -> nc::mutants::run_main
//   normcheck exercise [options]   -> nc::mutants::exercise_main
// argv[0] is the subcommand's name and is ignored; options follow (`--help` lists them). The
// CLI calls them as run_main(argc - 1, argv + 1).
//
// Exit codes, the normcheck CLI's: run_main returns 0 when every mutant that counts was killed
// or timed out; 1 the baseline (the shipped kernel) fails the suite; 2 a mutant survived; 64
// usage error; 70 a mutant plugin is missing or the suite could not be run; 77 the backend's
// device is absent (skipped). exercise_main: 0 the observations match the predictions, 1 they
// do not, 64 usage error.
#pragma once

namespace nc::mutants {

int run_main(int argc, char** argv);
int exercise_main(int argc, char** argv);

}  // namespace nc::mutants
