// A standalone C++ program linked against libordo.a and the static CUDA runtime (scripts/test.sh
// builds and runs it): the status and argument checks, as a real program.
#include "status_and_arguments.cpp"

#include <sys/stat.h>

int main() {
    struct stat st;
    int driver = stat("/dev/nvidiactl", &st) == 0;
    int fails = ffi_status_and_arguments_main(driver);
    std::printf("C++ program linked with libordo.a: %d failed checks (driver %s)\n", fails, driver ? "present" : "absent");
    return fails == 0 ? 0 : 1;
}
