#pragma once
// The one-line error of reading a cluster document, for the cluster tests.
#include <string>

#include "burst/cluster/cluster.h"
#include "burst/util/error.h"

namespace burst::cluster::testing {

// cluster_from_text's UserError message, or "(no error)" when the text reads.
inline std::string load_error(const std::string& text) {
  try {
    cluster_from_text(text);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace burst::cluster::testing
