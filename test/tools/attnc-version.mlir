// RUN: attnc --version | FileCheck %s

// The version names attnc's release and what it was built and runs with.
// CHECK: attnc {{[0-9]+\.[0-9]+\.[0-9]+}} (MLIR 22, NVRTC
