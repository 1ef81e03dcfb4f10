#pragma once
// The libtorch plugin (libburst_torch_commands.so beside the executable), loaded on first
// use by the commands that need libtorch (profile_commands.h explains why it is a plugin).

namespace burst::cli {

// Loads the plugin (once; it stays loaded) and returns `symbol` from it. Throws UserError
// when the plugin or the symbol is missing.
void* plugin_symbol(const char* symbol);

}  // namespace burst::cli
