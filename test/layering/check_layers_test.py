"""scripts/check-layers.py on small trees of its own: what it lets through and what it stops."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check-layers.py")


class CheckLayers(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        os.makedirs(os.path.join(root, "proto", "dra", "v1"))
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)

    def test_downward_and_generated_includes_pass(self):
        result = self.tree({
            "common/util/log.h": "#pragma once\n#include <string>\n",
            "common/node/model.h": '#include "common/util/log.h"\n',
            "rpc/server.h": '#include "common/util/log.h"\n',
            "dra/service.h": '#include "dra/v1/api.grpc.pb.h"\n#include "rpc/server.h"\n'
                             '#include "dra/flags.h"\n',
            "test/dra/service_test.cc": '#include "plugin/anything.h"\n'})
        self.assertEqual((result.returncode, result.stderr), (0, ""))

    def test_an_upward_include_fails_naming_the_line(self):
        result = self.tree({"common/util/log.h": '#pragma once\n\n#include "plugin/flags.h"\n',
                            "plugin/flags.h": "#pragma once\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn('common/util/log.h:3: includes "plugin/flags.h", but common/util/ may include '
                      "only nothing of ours", result.stderr)

    def test_a_lower_library_of_common_including_a_higher_one_fails(self):
        result = self.tree({"common/node/model.h": '#include "common/pools/pools.h"\n',
                            "common/pools/pools.h": "#pragma once\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn('common/node/model.h:1: includes "common/pools/pools.h", but common/node/ '
                      "may include only common/util", result.stderr)

    def test_code_in_common_itself_is_in_no_layer(self):
        result = self.tree({"common/log.h": "#pragma once\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("common/: a folder of C++ that is in no layer", result.stderr)

    def test_one_program_including_another_fails(self):
        result = self.tree({"plugin/main.cc": '#include "dra/flags.h"\n',
                            "dra/flags.h": "#pragma once\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn('plugin/main.cc:1: includes "dra/flags.h"', result.stderr)

    def test_a_new_folder_must_be_given_a_layer(self):
        result = self.tree({"gpu/topology.h": "#pragma once\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("gpu/: a folder of C++ that is in no layer", result.stderr)


if __name__ == "__main__":
    unittest.main()
