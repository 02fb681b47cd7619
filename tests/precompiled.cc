// Builds tests/precompiled.h for the test targets (cmake/ArenarpcTesting.cmake); runs no test.
int main() { return 0; }
