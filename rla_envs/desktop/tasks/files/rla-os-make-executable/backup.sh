#!/bin/sh
tar czf "$HOME/backup.tgz" "$HOME/Documents"
