// normcheck-mutants: the mutation runner and the exercise as a program of their own, until the
// `normcheck` CLI dispatches `normcheck mutants` and `normcheck exercise` to them.
//   normcheck-mutants [mutants] [options]   the campaign (see --help)
//   normcheck-mutants exercise [options]    the document's BLOCK exercise
#include <string>

#include "mutants.hpp"

int main(int argc, char** argv) {
  const std::string sub = argc > 1 ? argv[1] : "";
  if (sub == "exercise") return nc::mutants::exercise_main(argc - 1, argv + 1);
  if (sub == "mutants") return nc::mutants::run_main(argc - 1, argv + 1);
  return nc::mutants::run_main(argc, argv);
}
