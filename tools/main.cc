// tesscpp: the command line (cli.h).
#include "cli.h"

int main(int argc, char** argv) { return tesscpp::cli::Main(argc, argv, nullptr); }
