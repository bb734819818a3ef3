"""rla/Code: sandboxed code execution, code task formats and loaders, and the code-writing env.

Import-light: nothing heavy is imported here; the sandbox lives in :mod:`rla_envs.code.sandbox`.
"""
