// tessera-cli: plan, validate and inspect runs from the command line. Errors go to stderr with
// exit code 2 (bad input) and never a stack trace.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/text_table.hpp"
#include "spec/errors.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Tessera: plan, launch and compare Megatron-style training runs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tessera-cli 0.1.0"));
  tessera::cli::add_plan_commands(app);
  tessera::cli::add_runs_commands(app);
  tessera::cli::add_data_commands(app);
  tessera::cli::add_agent_commands(app);
  tessera::cli::add_launch_commands(app);
  tessera::cli::refuse_empty_values(app, {"runs note text"});
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tessera-cli: " << tessera::cli::printable(e.what(), true) << "\n";
    // CLI11 says "A subcommand is required" also of a misspelt one: name the ones there are.
    const CLI::App* level = &app;
    while (!level->get_subcommands().empty()) level = level->get_subcommands().front();
    std::string names;
    for (const auto* sub : level->get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
    if (!names.empty() && level->get_subcommands().empty())
      std::cerr << "the commands" << (level == &app ? "" : " of " + level->get_name()) << ": " << names
                << " (--help for more)\n";
    return 2;
  } catch (const tessera::spec::SpecError& e) {
    for (const auto& error : e.errors()) std::cerr << "error: " << tessera::cli::printable(error.message, true) << "\n";
    return 2;
  } catch (const tessera::cli::UsageError& e) {
    std::cerr << "error: " << tessera::cli::printable(e.what(), true) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << tessera::cli::printable(e.what(), true) << "\n";
    return 1;
  }
  return 0;
}
