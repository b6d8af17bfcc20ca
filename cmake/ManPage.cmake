# Writes a man page from a program's --help (and, for a program with subcommands, from each
# "<command> --help"), so the page never drifts from the options the program really takes.
# Script mode: cmake -DPROGRAM=exe -DNAME=quantscope-cli -DSUMMARY="..." -DVERSION=0.1.0
#                    -DOUTPUT=file.1 -P ManPage.cmake
# Subcommands are the two-space-indented words under the "Commands:" heading of the top help.
foreach(var PROGRAM NAME SUMMARY VERSION OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "ManPage.cmake: -D${var}= is required")
  endif()
endforeach()
# The GUI parses --help after QApplication is up: no display is needed for that.
set(ENV{QT_QPA_PLATFORM} offscreen)

function(qs_help out)
  execute_process(COMMAND ${PROGRAM} ${ARGN} --help
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ManPage.cmake: '${PROGRAM} ${ARGN} --help' failed (${rc}): ${err}")
  endif()
  # QCommandLineParser prints the path it was started as; the page names the installed program.
  string(REPLACE "${PROGRAM}" "${NAME}" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Plain text to roff inside .nf/.fi: backslashes and dashes escaped, control characters at the
# start of a line neutralised.
function(qs_roff out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  string(REGEX REPLACE "\n+$" "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

qs_help(top)
string(TOUPPER "${NAME}" title)
qs_roff(body "${top}")
string(CONCAT page ".TH ${title} 1 \"\" \"Quantscope ${VERSION}\" \"User Commands\"\n"
         ".SH NAME\n${NAME} \\- ${SUMMARY}\n"
         ".SH DESCRIPTION\n.nf\n${body}\n.fi\n")

set(commands "")
string(FIND "${top}" "\nCommands:\n" at)
if(at GREATER -1)
  string(SUBSTRING "${top}" ${at} -1 rest)
  string(REGEX MATCHALL "\n  [a-z][a-z-]* " found "${rest}")
  foreach(f ${found})
    string(STRIP "${f}" cmd)
    list(APPEND commands ${cmd})
  endforeach()
  list(REMOVE_DUPLICATES commands)
endif()
if(commands)
  string(APPEND page ".SH COMMANDS\n")
  foreach(cmd ${commands})
    qs_help(sub ${cmd})
    qs_roff(body "${sub}")
    string(APPEND page ".SS ${cmd}\n.nf\n${body}\n.fi\n")
  endforeach()
endif()
string(APPEND page ".SH SEE ALSO\n"
                   "quantscope(1), quantscope\\-cli(1); sample recipes in "
                   "/usr/share/quantscope/recipes.\n")
file(WRITE "${OUTPUT}" "${page}")
