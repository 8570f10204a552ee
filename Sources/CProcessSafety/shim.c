// The terminal guard of process_safety.h; everything else is in the header.
#include "process_safety.h"

#include <signal.h>

static int tty_fd = -1;
static struct termios tty_saved;
static struct sigaction tty_previous[4];
static const int tty_signals[4] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void tty_handler(int number) {
    if (tty_fd >= 0) (void)tcsetattr(tty_fd, TCSANOW, &tty_saved); // async-signal-safe
    for (int i = 0; i < 4; i++) {
        if (tty_signals[i] == number) (void)sigaction(number, &tty_previous[i], NULL);
    }
    (void)raise(number);
}

void secure_tty_guard(int fd, const struct termios *saved) {
    tty_saved = *saved;
    tty_fd = fd;
    struct sigaction action;
    action.sa_handler = tty_handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    for (int i = 0; i < 4; i++) {
        (void)sigaction(tty_signals[i], NULL, &tty_previous[i]);
        if (tty_previous[i].sa_handler != SIG_IGN) (void)sigaction(tty_signals[i], &action, NULL);
    }
}

void secure_tty_unguard(void) {
    for (int i = 0; i < 4; i++) (void)sigaction(tty_signals[i], &tty_previous[i], NULL);
    tty_fd = -1;
}
